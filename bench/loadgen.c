/* A keep-alive HTTP load client for gpulab's benchmarks: N threads, each with one
 * libcurl handle (one connection), POST the same body in a loop for a while and
 * record every request's latency. Prints one JSON line: requests, errors (transport
 * or non-2xx), requests per second, and latency percentiles in microseconds.
 *   loadgen URL BODY CONNECTIONS SECONDS
 * e.g. loadgen http://127.0.0.1:8080/transpose '{"m":64,...}' 64 10 */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct worker {
  pthread_t thread;
  const char *url, *body;
  double until;
  double *lat_us; /* grows */
  size_t n, cap;
  long errors;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t discard(char *p, size_t size, size_t n, void *arg) { return size * n; }

static void *run(void *arg) {
  struct worker *w = arg;
  CURL *h = curl_easy_init();
  struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(h, CURLOPT_URL, w->url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, w->body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  while (now_s() < w->until) {
    double t0 = now_s();
    long status = 0;
    CURLcode rc = curl_easy_perform(h);
    double t1 = now_s();
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status < 200 || status >= 300) w->errors++;
    if (w->n == w->cap) {
      w->cap = w->cap ? 2 * w->cap : 4096;
      double *grown = realloc(w->lat_us, w->cap * sizeof *grown);
      if (!grown) break;
      w->lat_us = grown;
    }
    w->lat_us[w->n++] = (t1 - t0) * 1e6;
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p) {
  return n ? v[(size_t)fmin((double)n - 1, floor(p / 100.0 * (double)n))] : 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: loadgen URL BODY CONNECTIONS SECONDS\n");
    return 2;
  }
  int conns = atoi(argv[3]);
  double seconds = atof(argv[4]);
  if (conns < 1 || conns > 1024 || seconds <= 0) {
    fprintf(stderr, "loadgen: CONNECTIONS must be 1..1024 and SECONDS > 0\n");
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct worker *w = calloc((size_t)conns, sizeof *w);
  double start = now_s();
  for (int i = 0; i < conns; i++) {
    w[i] = (struct worker){.url = argv[1], .body = argv[2], .until = start + seconds};
    pthread_create(&w[i].thread, NULL, run, &w[i]);
  }
  size_t total = 0;
  long errors = 0;
  for (int i = 0; i < conns; i++) {
    pthread_join(w[i].thread, NULL);
    total += w[i].n;
    errors += w[i].errors;
  }
  double elapsed = now_s() - start;
  double *all = malloc((total ? total : 1) * sizeof *all);
  size_t k = 0;
  for (int i = 0; i < conns; i++) {
    memcpy(all + k, w[i].lat_us, w[i].n * sizeof *all);
    k += w[i].n;
    free(w[i].lat_us);
  }
  qsort(all, total, sizeof *all, cmp);
  printf(
      "{\"connections\": %d, \"seconds\": %.2f, \"requests\": %zu, \"errors\": %ld, "
      "\"per_second\": %.1f, \"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f}\n",
      conns, elapsed, total, errors, (double)total / elapsed, pct(all, total, 50),
      pct(all, total, 90), pct(all, total, 99), total ? all[total - 1] : 0);
  free(all);
  free(w);
  curl_global_cleanup();
  return errors ? 1 : 0;
}
