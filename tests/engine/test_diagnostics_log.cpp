// RUN/diagnostics.jsonl's line format and reader (hsm/diagnostics_log.h) and the what-if
// edits' spelling (hsm/what_if.h): pure C++, no model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hsm/diagnostics_log.h"
#include "hsm/what_if.h"
#include "test_util.h"

namespace hsm {
namespace {

Indicators some_indicators(double base) {
  Indicators i;
  i.entropy = base + 0.125;
  i.conc = base * 2 + 1.0 / 3.0;
  i.headdiv = base / 7;
  i.sink = 0.1 + base;
  i.locfoc = {0.5, 0.25 + base, 1e-9, 0};
  return i;
}

DiagnosticsRecord some_record(int64_t step) {
  DiagnosticsRecord r;
  r.step = step;
  r.prompt = "Alice was so tired \"when\" she got home\n😀";
  DiagnosticsLayerRecord attn;
  attn.layer = 0;
  attn.mixer = "attn";
  attn.kind = MatrixKind::kAttention;
  attn.indicators = some_indicators(1.5);
  attn.heads = {{0, some_indicators(1.0)}, {1, some_indicators(2.0)}};
  attn.lens_kl = 2.718281828459045;
  DiagnosticsLayerRecord ab;
  ab.layer = 1;
  ab.mixer = "hsm_ab_mh";
  ab.kind = MatrixKind::kLinear;
  ab.indicators = some_indicators(0.3);
  ab.heads = {{0, some_indicators(0.2)}, {1, some_indicators(0.4)}};
  ab.weights.layer = 1;
  ab.weights.mixer = "hsm_ab_mh";
  ab.weights.shifts = {1, 2};
  ab.weights.a = {0.1f, -0.7f};
  ab.weights.b = {1.0f / 3.0f, 1e-7f};
  ab.lens_kl = 0;
  r.layers = {attn, ab};
  return r;
}

void expect_equal(const Indicators& a, const Indicators& b) {
  EXPECT_EQ(a.entropy, b.entropy);
  EXPECT_EQ(a.conc, b.conc);
  EXPECT_EQ(a.headdiv, b.headdiv);
  EXPECT_EQ(a.sink, b.sink);
  EXPECT_EQ(a.locfoc, b.locfoc);
}

void expect_equal(const DiagnosticsRecord& a, const DiagnosticsRecord& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.prompt, b.prompt);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const auto &x = a.layers[l], &y = b.layers[l];
    EXPECT_EQ(x.layer, y.layer);
    EXPECT_EQ(x.mixer, y.mixer);
    EXPECT_EQ(x.kind, y.kind);
    expect_equal(x.indicators, y.indicators);
    ASSERT_EQ(x.heads.size(), y.heads.size());
    for (size_t h = 0; h < x.heads.size(); ++h) {
      EXPECT_EQ(x.heads[h].head, y.heads[h].head);
      expect_equal(x.heads[h].indicators, y.heads[h].indicators);
    }
    EXPECT_EQ(x.weights.a, y.weights.a);
    EXPECT_EQ(x.weights.b, y.weights.b);
    EXPECT_EQ(x.weights.shifts, y.weights.shifts);
    EXPECT_EQ(x.weights.lag_weights, y.weights.lag_weights);
    EXPECT_EQ(x.lens_kl, y.lens_kl);
  }
}

TEST(DiagnosticsLog, RecordRoundTripsExactly) {
  const DiagnosticsRecord r = some_record(200);
  const std::string line = diagnostics_record_to_json_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const DiagnosticsRecord back = parse_diagnostics_record(line, "test");
  expect_equal(r, back);
  EXPECT_EQ(back.layers[1].weights.layer, 1);
  EXPECT_EQ(back.layers[1].weights.mixer, "hsm_ab_mh");
  // The fields the format documents, by name; the attention layer has no weights to write.
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["layers"][0]["kind"], "attention");
  EXPECT_TRUE(j["layers"][0]["weights"].empty());
  EXPECT_EQ(j["layers"][1]["weights"]["shifts"], nlohmann::json({1, 2}));
  EXPECT_FALSE(j["layers"][1]["weights"].contains("lag_weights"));
  // "indicators" is the object `hsm diagnose --json` writes, from the same writer.
  EXPECT_EQ(j["layers"][0]["indicators"], nlohmann::json::parse(indicators_to_json(r.layers[0].indicators)));
  EXPECT_EQ(nlohmann::json::parse(indicators_to_json(r.layers[0].indicators)).size(), 5u);
}

TEST(DiagnosticsLog, NonFiniteValuesReadBackAsNaN) {
  DiagnosticsRecord r = some_record(1);
  r.layers[0].lens_kl = NAN;
  r.layers[0].indicators.entropy = INFINITY;
  const DiagnosticsRecord back = parse_diagnostics_record(diagnostics_record_to_json_line(r), "t");
  EXPECT_TRUE(std::isnan(back.layers[0].lens_kl));
  EXPECT_TRUE(std::isnan(back.layers[0].indicators.entropy));
}

TEST(DiagnosticsLog, DamagedLinesAreRefusedWithTheReason) {
  auto error_of = [](const std::string& line) {
    try {
      parse_diagnostics_record(line, "run/diagnostics.jsonl line 3");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  auto good = nlohmann::json::parse(diagnostics_record_to_json_line(some_record(5)));
  EXPECT_NE(error_of("{\"step\": 1, \"prompt\""), "(accepted)");
  EXPECT_NE(error_of("[1,2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("[1,2]").find("run/diagnostics.jsonl line 3"), std::string::npos);
  auto with = [&](const std::function<void(nlohmann::json&)>& damage) {
    nlohmann::json j = good;
    damage(j);
    return error_of(j.dump());
  };
  EXPECT_NE(with([](auto& j) { j.erase("step"); }).find("\"step\""), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["step"] = -4; }).find("negative"), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["step"] = 1.5; }).find("whole number"), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["prompt"] = 3; }).find("\"prompt\" is not text"), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"] = "x"; }).find("not a list"), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"][1]["kind"] = "softmax"; }).find("'softmax'"), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"][0]["indicators"].erase("sink"); }).find("\"sink\""), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"][0]["indicators"]["locfoc"] = {1, 2}; }).find("4 values"),
            std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"][0]["heads"][1]["indicators"]["conc"] = "big"; }).find("head entry 1"),
            std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"][1]["weights"]["a"] = {1}; }).find("values of a"), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"][1]["weights"]["shifts"] = {-1}; }).find("negative"), std::string::npos);
  EXPECT_NE(with([](auto& j) { j["layers"][1].erase("lens_kl"); }).find("\"lens_kl\""), std::string::npos);
  EXPECT_EQ(with([](auto&) {}), "(accepted)");
}

TEST(DiagnosticsLog, LayersOfARecordAreNormalisedAcrossLayers) {
  const auto layers = layers_of(some_record(7));
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].mixer, "attn");
  EXPECT_EQ(layers[1].kind, MatrixKind::kLinear);
  EXPECT_EQ(layers[0].indicators.entropy, 1.625);
  EXPECT_EQ(layers[0].normalised.entropy, 1.0);  // the larger of two
  EXPECT_EQ(layers[1].normalised.entropy, 0.0);
  ASSERT_EQ(layers[1].heads.size(), 2u);
  EXPECT_EQ(layers[0].heads[1].shift, -1);  // attention reads every earlier position
  EXPECT_EQ(layers[1].heads[1].shift, 2);
  EXPECT_TRUE(layers[1].heads[1].matrix.empty());
}

void append(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

TEST(DiagnosticsLog, ReaderFollowsAppendsSkipsDamageAndStartsOverOnAShrunkFile) {
  const std::string dir = test::fresh_temp_dir("diaglog", "reader");
  const std::string path = dir + "/diagnostics.jsonl";
  DiagnosticsLogReader reader(dir);
  EXPECT_FALSE(reader.exists());
  EXPECT_TRUE(reader.poll().empty());
  EXPECT_TRUE(read_diagnostics_log(dir).empty());

  append(path, diagnostics_record_to_json_line(some_record(10)) + "\n" + "not json\n");
  const std::string third = diagnostics_record_to_json_line(some_record(30));
  append(path, diagnostics_record_to_json_line(some_record(20)) + "\n" + third.substr(0, 40));  // half written
  EXPECT_TRUE(reader.exists());
  auto got = reader.poll();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].step, 10);
  EXPECT_EQ(got[1].step, 20);
  EXPECT_EQ(reader.skipped(), 1);
  ASSERT_EQ(reader.problems().size(), 1u);
  EXPECT_NE(reader.problems()[0].find("line 2: not a diagnostics record"), std::string::npos) << reader.problems()[0];
  EXPECT_FALSE(reader.reset());

  append(path, third.substr(40) + "\n");
  got = reader.poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].step, 30);
  EXPECT_TRUE(reader.problems().empty());
  EXPECT_TRUE(reader.poll().empty());

  // A resume rewrote the file shorter: the reader starts over and says so.
  std::ofstream(path, std::ios::trunc) << diagnostics_record_to_json_line(some_record(10)) << "\n";
  got = reader.poll();
  EXPECT_TRUE(reader.reset());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].step, 10);
  EXPECT_EQ(read_diagnostics_log(dir).size(), 1u);
}

TEST(DiagnosticsLog, ReaderTakesTheFileInSlices) {
  const std::string dir = test::fresh_temp_dir("diaglog", "slices");
  std::string text;
  for (int i = 1; i <= 40; ++i) text += diagnostics_record_to_json_line(some_record(i)) + "\n";
  append(dir + "/diagnostics.jsonl", text);
  DiagnosticsLogReader reader(dir);
  std::vector<int64_t> steps;
  int polls = 0;
  do {
    for (const auto& r : reader.poll(1)) steps.push_back(r.step);  // at least kMaxLineBytes + 1 per slice
    ++polls;
  } while (reader.more() && polls < 100);
  EXPECT_EQ(steps.size(), 40u);
  EXPECT_EQ(steps.back(), 40);
}

TEST(WhatIf, AbEditsParseAndRefuseBadItemsByName) {
  const auto e = parse_ab_edits("3:0.5:1.2,0:-1e-3:0");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].layer, 3);
  EXPECT_EQ(e[0].a, std::vector<float>{0.5f});
  EXPECT_EQ(e[0].b, std::vector<float>{1.2f});
  EXPECT_EQ(e[1].a, std::vector<float>{-1e-3f});
  const auto spaced = parse_ab_edits(" 3 : 0.5 : 1.2 , 0:-1e-3:0 ");  // spaces around parts
  ASSERT_EQ(spaced.size(), 2u);
  EXPECT_TRUE(spaced[0] == e[0] && spaced[1] == e[1]);
  for (const std::string bad : {"", "3", "3:1", "3:1:2:4", "x:1:2", "-1:1:2", "3:a:2", "3:1:nan", "3:1:inf",
                                "3:1:2,", "3:1e99:2", "3: 1:2x", "+3:1:2", "3::2"}) {
    try {
      parse_ab_edits(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& err) {
      EXPECT_NE(std::string(err.what()).find("LAYER:A:B"), std::string::npos) << err.what();
    }
  }
  try {
    parse_ab_edits("2:0.5:1,4:q:1");
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("'4:q:1'"), std::string::npos) << err.what();
  }
}

TEST(WhatIf, LabelsSayTheEdits) {
  EXPECT_EQ(ab_edit_label({3, {0.5f}, {1.2f}}), "layer 3 a=0.5 b=1.2");
  EXPECT_EQ(ab_edit_label({2, {0.5f, 1}, {1.2f, 0}}), "layer 2 a,b edited");
  WhatIf w;
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(what_if_label(w), "no edits");
  w.knock_out = {{3, -1}, {1, 2}};
  w.ab = {{2, {0.5f}, {1}}};
  EXPECT_FALSE(w.empty());
  EXPECT_EQ(what_if_label(w), "layer 3 knocked out; layer 1 head 2 knocked out; layer 2 a=0.5 b=1");
}

}  // namespace
}  // namespace hsm
