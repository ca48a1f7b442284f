/* NVML (the driver's management library) loaded at run time with dlopen, so gpulabd
 * needs no NVML headers or library to build, and runs without it (its runs then
 * carry no clocks). Reads one device's SM clock, temperature, power, clock-event
 * (throttle) reasons and utilization, and the driver's version. Plain C, no CUDA: the device is named by its PCI bus id. */
#ifndef GPULAB_NVML_LOADER_H
#define GPULAB_NVML_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One reading; a field NVML refused stays 0. */
struct nvml_reading {
  int sm_mhz;       /* current SM clock */
  int temp_c;       /* GPU temperature */
  double power_w;   /* board power draw (NVML's recent average) */
  uint64_t reasons; /* clock-event reason bits (EXP_CLOCK_* in experiment.h) */
  /* nvmlDeviceGetUtilizationRates (util false where it failed): the percent of the
   * last sample period (1/6 s to 1 s) a kernel ran, and the memory was read or written. */
  bool util;
  int util_gpu_pct, util_mem_pct;
};

/* Loads libnvidia-ml.so.1 and initializes it (once per process), then finds the
 * device at pci_bus_id (cudaDeviceGetPCIBusId's text, e.g. "0000:3B:00.0"). Returns
 * the device's handle, or NULL with why filled (no library, a missing symbol, an
 * NVML error). Thread-safe. The handle stays valid for the life of the process. */
void *nvml_loader_device(const char *pci_bus_id, char *why, size_t why_len);

/* Reads dev (from nvml_loader_device) now. Returns false when even the SM clock
 * could not be read. Thread-safe; a few NVML calls (tens of microseconds). */
bool nvml_loader_read(void *dev, struct nvml_reading *out);

/* The NVIDIA driver's version ("570.86.15", nvmlSystemGetDriverVersion) into buf, or
 * "" without NVML. Thread-safe. */
void nvml_loader_driver_version(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
