#include "agent/worker/nvml.h"

#include <dlfcn.h>

namespace benchfleet::worker::nvml {
namespace {

// The handful of NVML entry points used, declared from the stable NVML C ABI.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr unsigned kClockSm = 1, kClockMem = 2, kTemperatureGpu = 0;

struct Api {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*driver)(char*, unsigned) = nullptr;
  nvmlReturn_t (*app_clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
};

template <class F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

const Api* api() {
  static const Api loaded = [] {
    Api a;
    a.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (a.lib == nullptr) return a;
    bind(a.lib, "nvmlInit_v2", a.init);
    bind(a.lib, "nvmlDeviceGetHandleByUUID", a.by_uuid);
    bind(a.lib, "nvmlDeviceGetClockInfo", a.clock);
    bind(a.lib, "nvmlDeviceGetTemperature", a.temperature);
    bind(a.lib, "nvmlDeviceGetPowerUsage", a.power);
    // The same bitmask under its current name (drivers >= 535); the older name is deprecated
    // there and kept only for drivers that predate it.
    bind(a.lib, "nvmlDeviceGetCurrentClocksEventReasons", a.throttle);
    if (a.throttle == nullptr) bind(a.lib, "nvmlDeviceGetCurrentClocksThrottleReasons", a.throttle);
    bind(a.lib, "nvmlSystemGetDriverVersion", a.driver);
    bind(a.lib, "nvmlDeviceGetApplicationsClock", a.app_clock);
    bind(a.lib, "nvmlDeviceGetEnforcedPowerLimit", a.power_limit);
    if (a.init == nullptr || a.init() != kSuccess) a.lib = nullptr;
    return a;
  }();
  return loaded.lib ? &loaded : nullptr;
}

}  // namespace

nlohmann::json driver_fingerprint(const std::string& gpu_uuid) {
  nlohmann::json out = nlohmann::json::object();
  const Api* a = api();
  char version[96] = {};
  if (a && a->driver && a->driver(version, sizeof version) == kSuccess) out["driver"] = version;
  // What an administrator sets and a comparison must hold equal: the SM clock kernels run at
  // (application clocks) and the power limit. Read only, never changed.
  nvmlDevice_t dev = nullptr;
  if (!a || !a->by_uuid || a->by_uuid(gpu_uuid.c_str(), &dev) != kSuccess) return out;
  unsigned v = 0;
  if (a->app_clock && a->app_clock(dev, kClockSm, &v) == kSuccess) out["sm_app_clock_mhz"] = v;
  if (a->power_limit && a->power_limit(dev, &v) == kSuccess) out["power_limit_w"] = v / 1000;
  return out;
}

nlohmann::json read_telemetry(const std::string& gpu_uuid) {
  nlohmann::json out = nlohmann::json::object();
  const Api* a = api();
  nvmlDevice_t dev = nullptr;
  if (!a || !a->by_uuid || a->by_uuid(gpu_uuid.c_str(), &dev) != kSuccess) return out;
  unsigned v = 0;
  if (a->clock && a->clock(dev, kClockSm, &v) == kSuccess) out["sm_clock_mhz"] = v;
  if (a->clock && a->clock(dev, kClockMem, &v) == kSuccess) out["mem_clock_mhz"] = v;
  if (a->temperature && a->temperature(dev, kTemperatureGpu, &v) == kSuccess) out["temperature_c"] = v;
  if (a->power && a->power(dev, &v) == kSuccess) out["power_w"] = v / 1000.0;
  unsigned long long reasons = 0;
  if (a->throttle && a->throttle(dev, &reasons) == kSuccess) out["throttle_reasons"] = reasons;
  return out;
}

}  // namespace benchfleet::worker::nvml
