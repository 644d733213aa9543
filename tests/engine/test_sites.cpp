// The one forward's named sites (model/sites.h): with no observer the observed forward gives the
// forward's own output bit for bit; the observers meet every site in the block's order, and what
// they read adds up to the residual stream; a replacement changes what follows it (a mixer's
// output replaced by zeros is that layer knocked out). On the CPU in fp64, so equalities hold to
// 1e-12 where the sums are the same in another order.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "hsm/knock_out.h"
#include "model/model.h"
#include "model/sites.h"
#include "model_test_util.h"

using namespace hsm;
using hsm::test::make_model;

namespace {

// The decoding tests' families (gpt, hsm_ab, a hybrid of every shift variant and attention) and
// DA's QK-source layers (their QK streams).
std::vector<std::pair<std::string, ModelConfig>> models() {
  auto m = test::models();
  m.push_back({"da_qk", test::config_with({{"attn", 64, 2}, {"static_emb_qk", 64, 2}, {"rnd_emb_qk", 64, 2},
                                           {"fixed_seq_qk", 64, 2}})});
  return m;
}

::testing::AssertionResult close(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() == b.sizes() && torch::allclose(a, b, 1e-12, 1e-12)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "largest difference "
                                       << (a.sizes() == b.sizes() ? (a - b).abs().max().item<double>() : -1.0);
}

const char* name_of(Site s) {
  switch (s) {
    case Site::kResidual: return "residual";
    case Site::kMixerMap: return "map";
    case Site::kMixer: return "mixer";
    case Site::kFfn: return "ffn";
    case Site::kFinal: return "final";
  }
  return "?";
}

}  // namespace

TEST(ModelSites, WithoutObserversTheObservedForwardIsTheForward) {
  for (const auto& [name, c] : models()) {
    auto model = make_model(c);
    torch::NoGradGuard no_grad;
    const auto idx = torch::randint(0, c.vocab_size, {2, c.context}, torch::kLong);
    EXPECT_TRUE(torch::equal(model->hidden(idx, Observers()), model->hidden(idx))) << name;
    EXPECT_TRUE(torch::equal(model->output(model->hidden(idx, Observers())), model->forward(idx))) << name;
    // Observers that only read leave every bit of the output as it was.
    Observers readers;
    for (Site s : {Site::kResidual, Site::kMixerMap, Site::kMixer, Site::kFfn, Site::kFinal})
      readers.at(s, [](const SiteEvent&) { return torch::Tensor(); });
    EXPECT_TRUE(close(model->hidden(idx, readers), model->hidden(idx))) << name;
  }
}

TEST(ModelSites, ObserversMeetEverySiteInTheBlocksOrderAndTheSitesAddUp) {
  for (const auto& [name, c] : models()) {
    auto model = make_model(c);
    torch::NoGradGuard no_grad;
    const auto idx = torch::randint(0, c.vocab_size, {1, c.context}, torch::kLong);
    std::vector<std::string> seen;
    std::vector<torch::Tensor> residual, mixer, ffn;
    torch::Tensor final_z;
    Observers o;
    auto keep = [&](std::vector<torch::Tensor>* into) {
      return [&seen, into](const SiteEvent& e) {
        seen.push_back(std::string(name_of(e.site)) + std::to_string(e.layer));
        if (into) into->push_back(e.value);
        if (e.site == Site::kMixerMap) {
          EXPECT_EQ(e.value.dim(), 3);  // [H, T, T]
          EXPECT_TRUE(e.mixer && e.input && e.qk && e.shifts);
        }
        return torch::Tensor();
      };
    };
    o.at(Site::kResidual, keep(&residual)).at(Site::kMixerMap, keep(nullptr)).at(Site::kMixer, keep(&mixer));
    o.at(Site::kFfn, keep(&ffn)).at(Site::kFinal, [&](const SiteEvent& e) {
      seen.push_back("final" + std::to_string(e.layer));
      final_z = e.value;
      return torch::Tensor();
    });
    const auto z = model->hidden(idx, o);
    std::vector<std::string> expected;
    for (size_t l = 0; l < c.layers.size(); ++l)
      for (const char* s : {"residual", "map", "mixer", "ffn"}) expected.push_back(s + std::to_string(l));
    expected.push_back("final-1");
    EXPECT_EQ(seen, expected) << name;
    ASSERT_EQ(residual.size(), c.layers.size());
    EXPECT_TRUE(close(residual[0], model->embed(idx))) << name;
    for (size_t l = 0; l < c.layers.size(); ++l) {
      const auto out = residual[l] + mixer[l] + ffn[l];
      if (l + 1 < c.layers.size()) EXPECT_TRUE(close(residual[l + 1], out)) << name << ", layer " << l;
      else EXPECT_TRUE(close(model->unembed(out), model->forward(idx))) << name;
    }
    EXPECT_TRUE(torch::equal(final_z, z)) << name;
  }
}

TEST(ModelSites, AReplacementChangesWhatFollowsAndOnlyThat) {
  for (const auto& [name, c] : models()) {
    auto model = make_model(c);
    torch::NoGradGuard no_grad;
    const auto idx = torch::randint(0, c.vocab_size, {2, c.context}, torch::kLong);
    const auto plain = model->hidden(idx);
    for (int64_t layer = 0; layer < static_cast<int64_t>(c.layers.size()); ++layer) {
      // The mixer's output replaced by zeros is the layer's mixer knocked out.
      Observers zero;
      zero.at(Site::kMixer, layer, [](const SiteEvent& e) { return torch::zeros_like(e.value); });
      const auto zeroed = model->hidden(idx, zero);
      model->set_knock_outs({KnockOut{layer, -1}});
      const auto knocked = model->hidden(idx);
      model->set_knock_outs({});
      // (A knock-out also changes the QK streams of DA's rnd/fixed layers above, which their own
      // pass computes; an observer sees the main pass only.)
      if (name != "da_qk") EXPECT_TRUE(close(zeroed, knocked)) << name << ", layer " << layer;
      EXPECT_FALSE(close(zeroed, plain)) << name << ", layer " << layer;
      // A replacement of the FFN's output by itself changes nothing; by twice itself, the output.
      Observers same, twice;
      same.at(Site::kFfn, layer, [](const SiteEvent& e) { return e.value.clone(); });
      twice.at(Site::kFfn, layer, [](const SiteEvent& e) { return e.value * 2; });
      EXPECT_TRUE(close(model->hidden(idx, same), plain)) << name << ", layer " << layer;
      EXPECT_FALSE(close(model->hidden(idx, twice), plain)) << name << ", layer " << layer;
    }
    // The residual stream replaced entering the last block = the run from there on that stream.
    const auto last = static_cast<int64_t>(c.layers.size()) - 1;
    std::vector<torch::Tensor> residual(c.layers.size());
    Observers keep;
    keep.at(Site::kResidual, [&](const SiteEvent& e) {
      residual[static_cast<size_t>(e.layer)] = e.value;
      return torch::Tensor();
    });
    model->hidden(idx, keep);
    const auto qk = model->qk_streams(model->embed(idx), c.context);
    EXPECT_TRUE(close(model->hidden_from(residual[static_cast<size_t>(last)], static_cast<size_t>(last), qk, Observers()),
                      plain))
        << name;
  }
}
