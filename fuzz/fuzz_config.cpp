// libFuzzer target: the model config JSON parser (hsm::config_from_json). Its promise: text
// is either a valid config or refused with a ConfigError. A config it accepts is one the
// rest of the engine can describe without building it, as `hsm inspect` and the studio's
// Architecture view do: it writes back to the same config, and its parameter count, cost per
// token and receptive field are computed without overflow or a crash.
#include "fuzz_util.h"
#include "hsm/config.h"
#include "hsm/cost.h"
#include "hsm/params.h"
#include "hsm/receptive_field.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hsm::ModelConfig config;
  try {
    config = hsm::config_from_json(std::string(hsm::fuzz::as_text(data, size)), "fuzz.json");
  } catch (const hsm::ConfigError&) {
    return 0;  // a refusal with a message
  }
  if (hsm::config_from_json(hsm::to_json(config), "written back") != config)
    hsm::fuzz::broken("to_json then config_from_json does not give the same config back");
  hsm::count_params(config).total();
  hsm::model_macs_per_token(config, config.context);
  // The receptive field costs layers × context; a long context is legitimate, only slow.
  if (config.context <= 4096) hsm::receptive_field(config);
  return 0;
}
