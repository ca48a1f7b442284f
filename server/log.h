/* The readable start-up and event log on stderr: one line each, with a UTC time. */
#ifndef GPULAB_LOG_H
#define GPULAB_LOG_H

void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
