/* dlopen-based NVML loader (nvml_loader.h). The library is opened and initialized
 * once and never closed; a failure is remembered with its reason. The few types and
 * constants used are declared here, as nvml.h defines them. */
#include "kernels/backends/cuda/nvml_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int nvml_return;              /* nvmlReturn_t; NVML_SUCCESS is 0 */
typedef struct nvml_device *nvml_dev; /* nvmlDevice_t: an opaque pointer */
#define NVML_CLOCK_SM 1               /* nvmlClockType_t */
#define NVML_TEMPERATURE_GPU 0        /* nvmlTemperatureSensors_t */
struct nvml_utilization {             /* nvmlUtilization_t */
  unsigned gpu, memory;               /* percent */
};

static struct {
  nvml_return (*init)(void);                                       /* nvmlInit_v2 */
  const char *(*error_string)(nvml_return);                        /* nvmlErrorString */
  nvml_return (*by_pci)(const char *, nvml_dev *);                 /* ..ByPciBusId_v2 */
  nvml_return (*clock)(nvml_dev, int, unsigned *);                 /* nvmlDeviceGetClockInfo */
  nvml_return (*temperature)(nvml_dev, int, unsigned *);           /* nvmlDeviceGetTemperature */
  nvml_return (*power)(nvml_dev, unsigned *);                      /* milliwatts */
  nvml_return (*reasons)(nvml_dev, unsigned long long *);          /* ..ClocksEventReasons, or the
                                                             older ..ClocksThrottleReasons */
  nvml_return (*utilization)(nvml_dev, struct nvml_utilization *); /* may be NULL */
  nvml_return (*driver_version)(char *, unsigned);                 /* may be NULL */
} fns;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[200];

static void *symbol(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p && !load_why[0]) snprintf(load_why, sizeof load_why, "libnvidia-ml.so.1 lacks %s", name);
  return p;
}

static void load(void) {
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(load_why, sizeof load_why, "%s", e ? e : "cannot open libnvidia-ml.so.1");
    return;
  }
  void *reasons = dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"); /* driver >= 535 */
  if (!reasons) reasons = symbol(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  void *p[6] = {symbol(lib, "nvmlInit_v2"),
                symbol(lib, "nvmlErrorString"),
                symbol(lib, "nvmlDeviceGetHandleByPciBusId_v2"),
                symbol(lib, "nvmlDeviceGetClockInfo"),
                symbol(lib, "nvmlDeviceGetTemperature"),
                symbol(lib, "nvmlDeviceGetPowerUsage")};
  if (load_why[0]) return; /* the library stays open: harmless */
  /* POSIX guarantees a dlsym result converts to the function's pointer type. */
  fns.init = (nvml_return(*)(void))p[0];
  fns.error_string = (const char *(*)(nvml_return))p[1];
  fns.by_pci = (nvml_return(*)(const char *, nvml_dev *))p[2];
  fns.clock = (nvml_return(*)(nvml_dev, int, unsigned *))p[3];
  fns.temperature = (nvml_return(*)(nvml_dev, int, unsigned *))p[4];
  fns.power = (nvml_return(*)(nvml_dev, unsigned *))p[5];
  fns.reasons = (nvml_return(*)(nvml_dev, unsigned long long *))reasons;
  void *util = dlsym(lib, "nvmlDeviceGetUtilizationRates"),
       *driver = dlsym(lib, "nvmlSystemGetDriverVersion");
  fns.utilization = (nvml_return(*)(nvml_dev, struct nvml_utilization *))util;
  fns.driver_version = (nvml_return(*)(char *, unsigned))driver;
  nvml_return rc = fns.init();
  if (rc != 0) {
    snprintf(load_why, sizeof load_why, "nvmlInit: %s", fns.error_string(rc));
    return;
  }
  loaded = true;
}

void *nvml_loader_device(const char *pci_bus_id, char *why, size_t why_len) {
  pthread_once(&load_once, load);
  if (!loaded) {
    snprintf(why, why_len, "%s", load_why);
    return NULL;
  }
  nvml_dev dev = NULL;
  nvml_return rc = fns.by_pci(pci_bus_id, &dev);
  if (rc != 0 || !dev) {
    snprintf(why, why_len, "nvmlDeviceGetHandleByPciBusId(%s): %s", pci_bus_id,
             rc ? fns.error_string(rc) : "no handle");
    return NULL;
  }
  return dev;
}

bool nvml_loader_read(void *dev, struct nvml_reading *out) {
  memset(out, 0, sizeof *out);
  if (!loaded || !dev) return false;
  unsigned v = 0;
  unsigned long long bits = 0;
  if (fns.clock(dev, NVML_CLOCK_SM, &v) != 0) return false;
  out->sm_mhz = (int)v;
  if (fns.temperature(dev, NVML_TEMPERATURE_GPU, &v) == 0) out->temp_c = (int)v;
  if (fns.power(dev, &v) == 0) out->power_w = v / 1000.0;
  if (fns.reasons(dev, &bits) == 0) out->reasons = bits;
  struct nvml_utilization u;
  if (fns.utilization && fns.utilization(dev, &u) == 0) {
    out->util = true;
    out->util_gpu_pct = (int)u.gpu;
    out->util_mem_pct = (int)u.memory;
  }
  return true;
}

void nvml_loader_driver_version(char *buf, size_t len) {
  pthread_once(&load_once, load);
  if (len) buf[0] = '\0';
  if (!loaded || !fns.driver_version || len < 2) return;
  if (fns.driver_version(buf, (unsigned)len) != 0) buf[0] = '\0';
}
