// RUN/traces.jsonl and the series over training (hsm/formation.h, issue 67): the record's line
// format, its reader, the route share, and the rule that marks the step a route formed. No
// LibTorch (hsm_core).
#include "hsm/formation.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <string_view>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "hsm/run_folder.h"
#include "io/json_fields.h"

namespace fs = std::filesystem;

namespace hsm {
namespace {

using json = nlohmann::json;

json number_json(double v) { return std::isfinite(v) ? json(v) : json(); }

json map_json(const TraceMap& m, int64_t positions) {
  json rows = json::array();
  for (size_t start = 0; start + static_cast<size_t>(positions) <= m.effect.size() && positions > 0;
       start += static_cast<size_t>(positions)) {
    json row = json::array();
    for (size_t i = start; i < start + static_cast<size_t>(positions); ++i) row.push_back(number_json(m.effect[i]));
    rows.push_back(row);
  }
  return rows;  // [layer][position], as `hsm trace --json`
}

// Reading: each value checked, a damaged line refused naming what is wrong.
using LineReader = JsonFields;

RouteKind route_kind_named(const std::string& name, const LineReader& r) {
  for (RouteKind k : {RouteKind::kResidual, RouteKind::kMixer, RouteKind::kFfn})
    if (name == route_kind_name(k)) return k;
  r.fail("route kind '" + name + "' is none of residual, mixer, ffn");
}

// The light reader's scanner: walks a line's top-level object, handing each member's key and the
// extent of its value to `member`, checking only that the JSON is well-formed in its brackets and
// strings (a value handed on is parsed, and so checked, by nlohmann).
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(const std::string& s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// s[i] is '"': the index after the closing quote.
size_t skip_string(const std::string& s, size_t i, const LineReader& r) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    } else if (static_cast<unsigned char>(s[i]) < 0x20) {
      r.fail("not a JSON object (a control character in a string)");
    }
  }
  r.fail("not a JSON object (a string is not closed)");
}

// The index after the value that starts at s[i] (a scalar ends at ',', '}', ']' or a space).
size_t skip_value(const std::string& s, size_t i, const LineReader& r) {
  std::string open;  // the brackets not yet closed
  do {
    if (i >= s.size()) r.fail("not a JSON object (it ends inside a value)");
    const char c = s[i];
    if (c == '"') {
      i = skip_string(s, i, r);
    } else if (c == '{' || c == '[') {
      open.push_back(c == '{' ? '}' : ']');
      ++i;
    } else if (c == '}' || c == ']') {
      if (open.empty()) r.fail("not a JSON object (a value is missing)");
      if (open.back() != c) r.fail("not a JSON object (brackets do not match)");
      open.pop_back();
      ++i;
    } else if (open.empty()) {  // a scalar: up to its end
      const size_t start = i;
      while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_space(s[i]) && s[i] != '"') ++i;
      if (i == start) r.fail("not a JSON object (a value is missing)");
    } else {
      ++i;
    }
  } while (!open.empty());
  return i;
}

template <typename F>
void for_each_member(const std::string& s, const LineReader& r, F member) {
  size_t i = skip_space(s, 0);
  if (i >= s.size() || s[i] != '{') r.fail("not a JSON object");
  i = skip_space(s, i + 1);
  if (i < s.size() && s[i] == '}') {
    i = skip_space(s, i + 1);
  } else {
    for (;;) {
      if (i >= s.size() || s[i] != '"') r.fail("not a JSON object (a member has no name)");
      const size_t key_end = skip_string(s, i, r);
      const std::string_view key(s.data() + i + 1, key_end - i - 2);
      i = skip_space(s, key_end);
      if (i >= s.size() || s[i] != ':') r.fail("not a JSON object (a name has no ':')");
      const size_t value = skip_space(s, i + 1);
      const size_t end = skip_value(s, value, r);
      member(key, std::string_view(s.data() + value, end - value));
      i = skip_space(s, end);
      if (i < s.size() && s[i] == ',') {
        i = skip_space(s, i + 1);
        continue;
      }
      if (i >= s.size() || s[i] != '}') r.fail("not a JSON object (a member is not followed by ',' or '}')");
      i = skip_space(s, i + 1);
      break;
    }
  }
  if (i != s.size()) r.fail("not a JSON object (text after it)");
}

}  // namespace

double route_share(const Routes& routes, const std::vector<int64_t>& positions) {
  const int64_t L = routes.layers, T = routes.positions;
  if (L <= 0 || T <= 0 || routes.answer_position < 0 || routes.answer_position >= T) return 0;
  // flow[b * T + p]: the share of the output's flow that passes through node (b, p).
  std::vector<double> flow(static_cast<size_t>((L + 1) * T), 0.0);
  flow[static_cast<size_t>(L * T + routes.answer_position)] = 1;
  std::vector<const RouteEdge*> edges;
  for (const RouteEdge& e : routes.edges)
    if (e.layer >= 0 && e.layer < L && e.from >= 0 && e.from < T && e.to >= 0 && e.to < T) edges.push_back(&e);
  std::stable_sort(edges.begin(), edges.end(), [](const RouteEdge* a, const RouteEdge* b) { return a->layer > b->layer; });
  for (const RouteEdge* e : edges)  // top layer first: a node's flow is whole before it is passed down
    flow[static_cast<size_t>(e->layer * T + e->from)] += e->weight * flow[static_cast<size_t>((e->layer + 1) * T + e->to)];
  double share = 0;
  for (int64_t p : positions)
    if (p >= 0 && p < T) share += flow[static_cast<size_t>(p)];
  return share;
}

std::vector<double> mixer_effects(const std::vector<TraceMap>& exact, int64_t layers, int64_t positions) {
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(layers, 0)), NAN);
  for (const TraceMap& m : exact) {
    if (m.site != "mixer" || m.effect.size() != static_cast<size_t>(layers * positions)) continue;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t p = 0; p < positions; ++p) {
        const double v = m.at(l, p, positions);
        double& best = out[static_cast<size_t>(l)];
        if (std::isfinite(v) && !(best >= v)) best = v;
      }
  }
  return out;
}

std::string trace_record_to_json_line(const TraceRecord& r) {
  json exact = json::object();
  for (const TraceMap& m : r.exact) exact[m.site] = map_json(m, r.positions);
  json edges = json::array();
  for (const RouteEdge& e : r.routes)
    edges.push_back({{"layer", e.layer}, {"from", e.from}, {"to", e.to}, {"weight", e.weight},
                     {"kind", route_kind_name(e.kind)}});
  json effects = json::array();
  for (double v : r.mixer_effect) effects.push_back(number_json(v));
  const json j = {{"step", r.step},
                  {"val_loss", number_json(r.val_loss)},
                  {"accuracy", number_json(r.accuracy)},
                  {"example", r.example},
                  {"clean", r.clean_labels},
                  {"corrupt", r.corrupt_labels},
                  {"clean_ids", r.clean},
                  {"corrupt_ids", r.corrupt},
                  {"corrupted_positions", r.corrupted_positions},
                  {"layers", r.layers},
                  {"positions", r.positions},
                  {"answer_position", r.answer_position},
                  {"answer_token", r.answer_token},
                  {"answer", r.answer_label},
                  {"clean_logprob", r.clean_logprob},
                  {"corrupt_logprob", r.corrupt_logprob},
                  {"no_effect", r.no_effect},
                  {"exact", exact},
                  {"route_threshold", r.route_threshold},
                  {"routes", edges},
                  {"route_share", r.route_share},
                  {"mixer_effect", effects},
                  {"seconds", r.seconds}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

TraceRecord parse_trace_record(const std::string& line, const std::string& where) {
  const LineReader r{where};
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) r.fail("not a JSON object");
  TraceRecord t;
  t.step = r.whole(r.member(j, "step"), "\"step\"");
  t.val_loss = r.number(r.member(j, "val_loss"), "\"val_loss\"");
  t.accuracy = r.number(r.member(j, "accuracy"), "\"accuracy\"");
  t.example = r.text(r.member(j, "example"), "\"example\"");
  t.clean_labels = r.texts(r.member(j, "clean"), "\"clean\"");
  t.corrupt_labels = r.texts(r.member(j, "corrupt"), "\"corrupt\"");
  t.clean = r.wholes<int32_t>(r.member(j, "clean_ids"), "\"clean_ids\"");
  t.corrupt = r.wholes<int32_t>(r.member(j, "corrupt_ids"), "\"corrupt_ids\"");
  t.corrupted_positions = r.wholes<int64_t>(r.member(j, "corrupted_positions"), "\"corrupted_positions\"");
  t.layers = r.whole(r.member(j, "layers"), "\"layers\"");
  t.positions = r.whole(r.member(j, "positions"), "\"positions\"");
  if (t.layers > 100000 || t.positions > 10000000) r.fail("\"layers\" or \"positions\" is too large");
  if (static_cast<int64_t>(t.clean.size()) != t.positions || t.corrupt.size() != t.clean.size() ||
      t.clean_labels.size() != t.clean.size() || t.corrupt_labels.size() != t.clean.size())
    r.fail("the prompts do not have \"positions\" tokens");
  t.answer_position = r.whole(r.member(j, "answer_position"), "\"answer_position\"");
  if (t.answer_position >= t.positions) r.fail("\"answer_position\" is outside the prompt");
  t.answer_token = static_cast<int32_t>(r.whole(r.member(j, "answer_token"), "\"answer_token\""));
  t.answer_label = r.text(r.member(j, "answer"), "\"answer\"");
  t.clean_logprob = r.number(r.member(j, "clean_logprob"), "\"clean_logprob\"");
  t.corrupt_logprob = r.number(r.member(j, "corrupt_logprob"), "\"corrupt_logprob\"");
  const json& no_effect = r.member(j, "no_effect");
  if (!no_effect.is_boolean()) r.fail("\"no_effect\" is not true or false");
  t.no_effect = no_effect.get<bool>();
  const json& exact = r.member(j, "exact");
  if (!exact.is_object()) r.fail("\"exact\" is not an object");
  for (const char* site : {"residual", "mixer", "ffn"}) {
    auto it = exact.find(site);
    if (it == exact.end()) continue;
    const std::string what = std::string("the exact \"") + site + "\" map";
    TraceMap m{site, {}};
    for (const json& row : r.array(*it, what)) {
      const std::vector<double> values = r.numbers(row, what + " row");
      if (static_cast<int64_t>(values.size()) != t.positions) r.fail(what + " has a row of another length");
      m.effect.insert(m.effect.end(), values.begin(), values.end());
    }
    if (static_cast<int64_t>(m.effect.size()) != t.layers * t.positions) r.fail(what + " does not have \"layers\" rows");
    t.exact.push_back(std::move(m));
  }
  t.route_threshold = r.number(r.member(j, "route_threshold"), "\"route_threshold\"");
  for (const json& e : r.array(r.member(j, "routes"), "\"routes\"")) {
    if (!e.is_object()) r.fail("a route edge is not an object");
    RouteEdge edge;
    edge.layer = r.whole(r.member(e, "layer"), "an edge's \"layer\"");
    edge.from = r.whole(r.member(e, "from"), "an edge's \"from\"");
    edge.to = r.whole(r.member(e, "to"), "an edge's \"to\"");
    edge.weight = r.number(r.member(e, "weight"), "an edge's \"weight\"");
    edge.kind = route_kind_named(r.text(r.member(e, "kind"), "an edge's \"kind\""), r);
    if (edge.layer >= t.layers || edge.from >= t.positions || edge.to >= t.positions)
      r.fail("a route edge is outside the record's layers and positions");
    t.routes.push_back(edge);
  }
  t.route_share = r.number(r.member(j, "route_share"), "\"route_share\"");
  t.mixer_effect = r.numbers(r.member(j, "mixer_effect"), "\"mixer_effect\"");
  if (static_cast<int64_t>(t.mixer_effect.size()) != t.layers) r.fail("\"mixer_effect\" does not have a value per layer");
  t.seconds = r.number(r.member(j, "seconds"), "\"seconds\"");
  return t;
}

TraceLogReader::TraceLogReader(std::string run_dir) : tail_(RunFolder(run_dir).traces) {}

bool TraceLogReader::exists() const {
  std::error_code ec;
  return fs::is_regular_file(tail_.path(), ec);
}

std::vector<TraceRecord> TraceLogReader::poll(uint64_t max_bytes) {
  std::vector<TraceRecord> out;
  tail_.poll(max_bytes, kMaxLineBytes, "trace record",
             [&](const std::string& line) { out.push_back(parse_trace_record(line, "")); });
  return out;
}

std::vector<TraceRecord> read_trace_log(const std::string& run_dir) { return TraceLogReader(run_dir).poll(); }

FormationPoint parse_formation_point(const std::string& line, const std::string& where, std::string* example) {
  const LineReader r{where};
  // The members read, by name (a name given twice: its last value, as json::parse keeps).
  static constexpr const char* kRead[] = {"step", "val_loss", "accuracy", "route_share", "mixer_effect", "layers", "example"};
  constexpr size_t kCount = std::size(kRead);
  std::array<std::string_view, kCount> values{};
  std::array<bool, kCount> found{};
  for_each_member(line, r, [&](std::string_view key, std::string_view value) {
    for (size_t k = 0; k < kCount; ++k)
      if (key == kRead[k]) values[k] = value, found[k] = true;
  });
  auto member = [&](size_t k) {
    if (!found[k]) r.fail(std::string("the record has no \"") + kRead[k] + "\"");
    const json j = json::parse(values[k], nullptr, false);
    if (j.is_discarded()) r.fail("not a JSON object");
    return j;
  };
  FormationPoint p;
  p.step = r.whole(member(0), "\"step\"");
  p.val_loss = r.number(member(1), "\"val_loss\"");
  p.accuracy = r.number(member(2), "\"accuracy\"");
  const json example_json = member(6);
  const std::string example_text = r.text(example_json, "\"example\"");
  const int64_t layers = r.whole(member(5), "\"layers\"");
  if (layers > 100000) r.fail("\"layers\" or \"positions\" is too large");
  p.route_share = r.number(member(3), "\"route_share\"");
  p.mixer_effect = r.numbers(member(4), "\"mixer_effect\"");
  if (static_cast<int64_t>(p.mixer_effect.size()) != layers) r.fail("\"mixer_effect\" does not have a value per layer");
  if (example) *example = example_text;
  return p;
}

std::vector<FormationPoint> read_formation_points(const std::string& run_dir, std::string* example) {
  JsonlTail tail(RunFolder(run_dir).traces);
  std::vector<FormationPoint> out;
  tail.poll(UINT64_MAX, TraceLogReader::kMaxLineBytes, "trace record",
            [&](const std::string& line) { out.push_back(parse_formation_point(line, "", example)); });
  return out;
}

// ---- the series --------------------------------------------------------------------------------

Formation formation(const std::vector<TraceRecord>& records, const FormationRule& rule) {
  std::vector<FormationPoint> points;
  points.reserve(records.size());
  for (const TraceRecord& r : records) points.push_back({r.step, r.val_loss, r.accuracy, r.route_share, r.mixer_effect});
  return formation(points, rule);
}

Formation formation(const std::vector<FormationPoint>& points, const FormationRule& rule) {
  Formation f;
  f.rule = rule;
  std::map<int64_t, const FormationPoint*> by_step;  // a step recorded twice: the later line
  for (const FormationPoint& p : points) by_step[p.step] = &p;
  for (const auto& [step, p] : by_step) {
    f.points.push_back(*p);
    f.layers = std::max(f.layers, static_cast<int64_t>(p->mixer_effect.size()));
    f.max_share = std::max(f.max_share, p->route_share);
  }
  // Formed: the first point of the last unbroken run of points at or above the threshold that
  // reaches the end.
  for (size_t i = f.points.size(); i-- > 0;) {
    if (!(f.points[i].route_share >= rule.share_threshold)) break;
    f.formed_step = f.points[i].step;
  }
  // The accuracy jump: from the first finite accuracy to the last.
  const FormationPoint* first = nullptr;
  const FormationPoint* last = nullptr;
  for (const FormationPoint& p : f.points)
    if (std::isfinite(p.accuracy)) {
      if (!first) first = &p;
      last = &p;
    }
  if (first) {
    f.accuracy_first = first->accuracy;
    f.accuracy_last = last->accuracy;
    if (last->accuracy > first->accuracy) {
      f.accuracy_level = first->accuracy + rule.accuracy_fraction * (last->accuracy - first->accuracy);
      for (const FormationPoint& p : f.points)
        if (std::isfinite(p.accuracy) && p.accuracy >= f.accuracy_level) {
          f.accuracy_step = p.step;
          break;
        }
    }
  }
  return f;
}

Formation run_formation(const std::string& run_dir, const FormationRule& rule) {
  return formation(read_formation_points(run_dir), rule);
}

std::string Formation::summary() const {
  char buf[256];
  std::string out;
  if (points.empty()) return "no traces recorded";
  if (formed_step >= 0) {
    std::snprintf(buf, sizeof buf, "route from the corrupted position formed at step %lld (share >= %.2f from then on)",
                  static_cast<long long>(formed_step), rule.share_threshold);
  } else {
    std::snprintf(buf, sizeof buf, "no route from the corrupted position formed in %lld steps (largest share %.3f, threshold %.2f)",
                  static_cast<long long>(points.back().step), max_share, rule.share_threshold);
  }
  out = buf;
  if (accuracy_step >= 0)
    std::snprintf(buf, sizeof buf, "; accuracy crossed %.2f (half its gain, %.2f to %.2f) at step %lld", accuracy_level,
                  accuracy_first, accuracy_last, static_cast<long long>(accuracy_step));
  else if (std::isfinite(accuracy_first))
    std::snprintf(buf, sizeof buf, "; accuracy did not rise (%.2f to %.2f)", accuracy_first, accuracy_last);
  else
    buf[0] = '\0';
  return out + buf;
}

}  // namespace hsm
