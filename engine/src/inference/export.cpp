// `hsm export` (hsm/export.h): the run loads as every command loads it, its weights are
// converted to the smaller dtype, and the copy is written by the run folder's one recipe
// (RunFolder::publish_copy, the one Model::save_as takes too).
#include "hsm/export.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "eval/task_data.h"
#include "hsm/run_folder.h"
#include "hsm/safetensors.h"
#include "hsm/tasks.h"
#include "model/model.h"
#include "model/weights_io.h"
#include "run/run_json.h"

namespace fs = std::filesystem;

namespace hsm {

void export_run(const std::string& run_dir, const std::string& out_dir, const ExportOptions& options) {
  const torch::ScalarType target = scalar_type(options.dtype);
  const RunFolder from(run_dir);
  const std::string weights = options.best && fs::exists(from.best) ? from.best : from.weights;
  nlohmann::json config = read_run_config(run_dir);  // checks it is a run folder
  from.check_export_target(out_dir, options.force);
  // A task run has its task and no tokenizer: the export carries what it has.
  const std::string task = run_task(run_dir);
  const bool task_run = !task.empty();
  // The source loads as every other command loads it, or nothing is exported (issue 34).
  const ModelConfig model_config = config_from_json(config["model"].dump(), from.config);
  if (task_run)
    check_run_fits_task(run_dir, model_config, *parse_task(task));
  else
    load_run_tokenizer(run_dir, config);  // the export carries the model's own tokenizer, or none
  check_weights_fit(model_config, weights, from.config);
  {
    Gpt model(model_config);
    load_weights(model, weights);  // shapes, names, finite values
  }
  SafetensorsFile file = read_safetensors(weights);
  std::vector<TensorBlob> blobs;
  for (const TensorBlob& b : file.tensors) {
    if (b.dtype == "I64") {  // token ids stay integers
      blobs.push_back(b);
      continue;
    }
    auto t = from_blob(b).to(target).contiguous();
    if (!torch::isfinite(t).all().item<bool>())
      throw std::runtime_error(weights + ": tensor '" + b.name + "' does not fit in " + options.dtype +
                               " (values beyond its range): export as F32 (--dtype F32)");
    TensorBlob out;
    out.name = b.name;
    out.dtype = options.dtype;
    out.shape = b.shape;
    out.data.assign(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
    blobs.push_back(std::move(out));
  }
  file.metadata["exported_from"] = fs::path(weights).filename().string();
  config["export"] = {{"dtype", options.dtype}, {"weights", fs::path(weights).filename().string()}};
  // Written whole beside `out`, then published in one step: a kill leaves the old export or the new one.
  from.publish_copy(out_dir, config.dump(2) + "\n",
                    [&](const std::string& path) { write_safetensors(path, blobs, file.metadata); });
}

}  // namespace hsm
