// The N-API floor for `npm run bench`: the least any native snowflake call can cost. One raw N-API callback that
// reads the clock once and returns one BigInt, with no lock, no check and no state but a counter. benchmark/floor.js
// builds it with the C compiler against the running Node's headers.
#include <stdint.h>
#include <time.h>
#include <node_api.h>

static uint64_t counter;

static napi_value floor_id(napi_env env, napi_callback_info info) {
  (void)info;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
  napi_value out;
  napi_create_bigint_uint64(env, ((ms - 1580486400000ull) << 22) | (counter++ & 0x3fffff), &out);
  return out;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "floor", NAPI_AUTO_LENGTH, floor_id, NULL, &fn);
  napi_set_named_property(env, exports, "floor", fn);
  return exports;
}
