/* The readable log on stderr. One write per line so lines of threads never mix. */
#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static void log_line(const char *level, const char *fmt, va_list ap) {
  char line[1024];
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
  n += snprintf(line + n, sizeof line - (size_t)n, ".%03dZ %s ", (int)(tv.tv_usec / 1000), level);
  if (n < (int)sizeof line) n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  fwrite(line, 1, (size_t)n, stderr);
}

void log_info(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line("info", fmt, ap);
  va_end(ap);
}

void log_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line("warn", fmt, ap);
  va_end(ap);
}
