/* The floor under gpulabd's HTTP path: libmicrohttpd with a bare handler that reads
 * the request body and answers a fixed JSON document, with the daemon options
 * gpulabd uses (a thread pool, poll, suspend/resume allowed). What a tiny job costs
 * above this is gpulab's own. Not a test.
 *   bare_http PORT [THREADS]   (default 4 threads; stops on SIGINT or SIGTERM) */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char answer[] = "{\"id\":1,\"state\":\"done\",\"passed\":true}\n";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
  static int first;
  if (*req_cls == NULL) { /* the head: the body (if any) comes in the next calls */
    *req_cls = &first;
    return MHD_YES;
  }
  if (*upload_data_size) { /* the body, read and dropped */
    *upload_data_size = 0;
    return MHD_YES;
  }
  struct MHD_Response *resp = MHD_create_response_from_buffer(sizeof answer - 1, (void *)answer,
                                                              MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
  MHD_destroy_response(resp);
  return ret;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: bare_http PORT [THREADS]\n");
    return 2;
  }
  int port = atoi(argv[1]), threads = argc == 3 ? atoi(argv[2]) : 4;
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC |
          MHD_USE_ERROR_LOG,
      (uint16_t)port, NULL, NULL, on_request, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
      MHD_OPTION_CONNECTION_LIMIT, 4096u, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "bare_http: cannot listen on port %d\n", port);
    return 1;
  }
  int sig;
  sigwait(&stop, &sig);
  MHD_stop_daemon(d);
  return 0;
}
