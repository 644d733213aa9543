// RUN/diagnostics.jsonl (hsm/diagnostics_log.h, docs/checkpoint-format.md): one record per
// validation, its line format and an incremental reader. No LibTorch (hsm_core).
#include "hsm/diagnostics_log.h"
#include "hsm/run_folder.h"
#include "io/json_fields.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>


namespace fs = std::filesystem;

namespace hsm {
namespace {

using json = nlohmann::json;

json indicators_json(const Indicators& i) {
  return {{"entropy", i.entropy}, {"conc", i.conc}, {"headdiv", i.headdiv}, {"sink", i.sink}, {"locfoc", i.locfoc}};
}

// Reading: every value checked (io/json_fields.h), so a damaged line is refused with what is
// wrong; and the indicators object every layer and head entry carries.
struct Reader : JsonFields {
  Indicators indicators(const json& j, const std::string& in) const {
    const json& o = object(member(j, "indicators", in), in + "'s \"indicators\"");
    const std::string at = in + "'s indicator ";
    Indicators i;
    i.entropy = number(member(o, "entropy", at + "object"), at + "\"entropy\"");
    i.conc = number(member(o, "conc", at + "object"), at + "\"conc\"");
    i.headdiv = number(member(o, "headdiv", at + "object"), at + "\"headdiv\"");
    i.sink = number(member(o, "sink", at + "object"), at + "\"sink\"");
    const json& loc = array(member(o, "locfoc", at + "object"), at + "\"locfoc\"");
    if (loc.size() != i.locfoc.size()) fail(at + "\"locfoc\" does not have 4 values");
    for (size_t n = 0; n < i.locfoc.size(); ++n) i.locfoc[n] = number(loc[n], at + "\"locfoc\"");
    return i;
  }
};

MatrixKind kind_named(const std::string& name, const Reader& r, const std::string& in) {
  for (MatrixKind k : {MatrixKind::kAttention, MatrixKind::kLinear, MatrixKind::kJacobian})
    if (name == matrix_kind_name(k)) return k;
  r.fail(in + "'s \"kind\" '" + name + "' is none of attention, linear, jacobian");
}

}  // namespace

std::string indicators_to_json(const Indicators& i) { return indicators_json(i).dump(); }

std::string diagnostics_record_to_json_line(const DiagnosticsRecord& r) {
  json layers = json::array();
  for (const DiagnosticsLayerRecord& l : r.layers) {
    json heads = json::array();
    for (const DiagnosticsHeadRecord& h : l.heads)
      heads.push_back({{"head", h.head}, {"indicators", indicators_json(h.indicators)}});
    json weights = json::object();
    if (!l.weights.a.empty()) weights["a"] = l.weights.a;
    if (!l.weights.b.empty()) weights["b"] = l.weights.b;
    if (!l.weights.shifts.empty()) weights["shifts"] = l.weights.shifts;
    if (!l.weights.lag_weights.empty()) weights["lag_weights"] = l.weights.lag_weights;
    layers.push_back({{"layer", l.layer},
                      {"mixer", l.mixer},
                      {"kind", matrix_kind_name(l.kind)},
                      {"indicators", indicators_json(l.indicators)},
                      {"heads", heads},
                      {"weights", weights},
                      {"lens_kl", l.lens_kl}});
  }
  const json j = {{"step", r.step}, {"prompt", r.prompt}, {"layers", layers}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

DiagnosticsRecord parse_diagnostics_record(const std::string& line, const std::string& where) {
  const Reader r{{where}};
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) r.fail("not a JSON object");
  DiagnosticsRecord rec;
  rec.step = r.whole(r.member(j, "step", "the record"), "\"step\"");
  rec.prompt = r.text(r.member(j, "prompt", "the record"), "\"prompt\"");
  for (const json& lj : r.array(r.member(j, "layers", "the record"), "\"layers\"")) {
    const std::string in = "layer entry " + std::to_string(rec.layers.size());
    r.object(lj, in);
    DiagnosticsLayerRecord l;
    l.layer = r.small(r.member(lj, "layer", in), in + "'s \"layer\"");
    l.mixer = r.text(r.member(lj, "mixer", in), in + "'s \"mixer\"");
    l.kind = kind_named(r.text(r.member(lj, "kind", in), in + "'s \"kind\""), r, in);
    l.indicators = r.indicators(lj, in);
    for (const json& hj : r.array(r.member(lj, "heads", in), in + "'s \"heads\"")) {
      const std::string hin = in + " head entry " + std::to_string(l.heads.size());
      r.object(hj, hin);
      l.heads.push_back({r.small(r.member(hj, "head", hin), hin + "'s \"head\""), r.indicators(hj, hin)});
    }
    const json& w = r.object(r.member(lj, "weights", in), in + "'s \"weights\"");
    l.weights.layer = l.layer;
    l.weights.mixer = l.mixer;
    if (w.contains("a")) l.weights.a = r.floats(w["a"], in + "'s weight \"a\"");
    if (w.contains("b")) l.weights.b = r.floats(w["b"], in + "'s weight \"b\"");
    if (w.contains("shifts")) l.weights.shifts = r.wholes(w["shifts"], in + "'s \"shifts\"");
    if (w.contains("lag_weights")) l.weights.lag_weights = r.floats(w["lag_weights"], in + "'s \"lag_weights\"");
    if (l.weights.a.size() != l.weights.b.size()) r.fail(in + " has " + std::to_string(l.weights.a.size()) +
                                                         " values of a but " + std::to_string(l.weights.b.size()) +
                                                         " of b");
    l.lens_kl = r.number(r.member(lj, "lens_kl", in), in + "'s \"lens_kl\"");
    rec.layers.push_back(std::move(l));
  }
  return rec;
}

std::vector<LayerDiagnostics> layers_of(const DiagnosticsRecord& r) {
  std::vector<LayerDiagnostics> out;
  for (const DiagnosticsLayerRecord& l : r.layers) {
    LayerDiagnostics d;
    d.layer = l.layer;
    d.mixer = l.mixer;
    d.kind = l.kind;
    d.indicators = l.indicators;
    const std::vector<int64_t>& shifts = l.weights.shifts;
    for (const DiagnosticsHeadRecord& h : l.heads) {
      HeadDiagnostics hd;
      hd.head = h.head;
      hd.indicators = h.indicators;
      // One shift per head, or one the layer's heads share; attention has none (-1).
      if (shifts.size() == 1) hd.shift = shifts[0];
      else if (h.head >= 0 && static_cast<size_t>(h.head) < shifts.size()) hd.shift = shifts[static_cast<size_t>(h.head)];
      d.heads.push_back(std::move(hd));
    }
    out.push_back(std::move(d));
  }
  normalise_across_layers(out);
  return out;
}

DiagnosticsLogReader::DiagnosticsLogReader(std::string run_dir)
    : tail_(RunFolder(run_dir).diagnostics) {}

bool DiagnosticsLogReader::exists() const {
  std::error_code ec;
  return fs::is_regular_file(tail_.path(), ec);
}

std::vector<DiagnosticsRecord> DiagnosticsLogReader::poll(uint64_t max_bytes) {
  std::vector<DiagnosticsRecord> out;
  tail_.poll(max_bytes, kMaxLineBytes, "diagnostics record", [&](const std::string& line) {
               out.push_back(parse_diagnostics_record(line, ""));  // poll_jsonl names the line
             });
  return out;
}

std::vector<DiagnosticsRecord> read_diagnostics_log(const std::string& run_dir) {
  return DiagnosticsLogReader(run_dir).poll();
}

}  // namespace hsm
