/* Who may use gpulabd: the clients of a tokens file, each with its limits. A token
 * file has one client per line:
 *   TOKEN NAME [max_queued=N] [max_buffer_bytes=N] [rate=JOBS_PER_S] [admin]
 * Blank lines and lines starting with '#' are skipped. Tokens are compared in
 * constant time. Immutable once loaded: safe to read from any thread. */
#ifndef GPULAB_AUTH_H
#define GPULAB_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_TOKEN_MAX 128

struct auth_client {
  char name[64];
  int max_queued;            /* 0: the server's --max-queued */
  uint64_t max_buffer_bytes; /* 0: no limit of its own */
  double rate;               /* job submissions per second; 0: no limit */
  bool admin;                /* sees and cancels every client's jobs and buffers */
};

struct auth;

/* Reads path. Returns 0, or a negative errno (-EINVAL: a bad line) with a message that
 * names the file and the line. */
int auth_load(const char *path, struct auth **out, char *err, size_t err_len);
void auth_free(struct auth *a); /* NULL is a no-op */
int auth_count(const struct auth *a);

/* The client whose token this is, or NULL. Takes the same time whichever token
 * (if any) matches, so response times do not leak tokens. */
const struct auth_client *auth_check(const struct auth *a, const char *token);

#endif
