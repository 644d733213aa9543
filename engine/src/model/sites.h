#pragma once
// The named sites of the model's one forward (GptImpl::run) and the observers one call
// attaches to them (docs/architecture.md, "One forward, many observers"). An analysis says which
// sites it reads and what it does there; it never runs a block's pieces (LN1, the mixer, LN2, the
// FFN) itself. Observers belong to one call: nothing is set on the model.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace hsm {

// In the order one block meets them (kFinal once, after the last block).
enum class Site {
  kResidual,  // the residual stream entering block l [B, T, d] (every layer, a skipped one too)
  kMixerMap,  // the mixer's own map of its input LN1(h) (MixerImpl::mixing_matrices) [H, T, T], of the
              // batch's first row (a map is of one prompt): read only
  kMixer,     // the mixer's output [B, T, d] (zero for a knocked-out mixer)
  kFfn,       // the FFN's output [B, T, d]
  kFinal,     // the final norm's output ln_f(h) [B, T, d], before the tied output layer (layer -1)
};

struct MixerImpl;

struct SiteEvent {
  Site site;
  int64_t layer;               // the block (0-based); -1 at kFinal
  const torch::Tensor& value;  // the activation; at kMixerMap the map [H, T, T]
  // kMixerMap only: the mixer, its input LN1(h) [1, T, d], its QK input LN1(QK stream) (a DA
  // *_qk layer's; else undefined) and each head's shift (-1: it reads every earlier position).
  MixerImpl* mixer = nullptr;
  const torch::Tensor* input = nullptr;
  const torch::Tensor* qk = nullptr;
  const std::vector<int64_t>* shifts = nullptr;
};

// Reads the event; a defined tensor returned (of the value's shape) replaces the activation from
// there on (ignored at kMixerMap). An undefined one leaves it as it is.
using Observer = std::function<torch::Tensor(const SiteEvent&)>;

class Observers {
 public:
  static constexpr int64_t kEveryLayer = -1;
  // Calls `observer` at `site` of `layer` (kEveryLayer: of every layer), after the ones attached before.
  Observers& at(Site site, int64_t layer, Observer observer) {
    entries_.push_back({site, layer, std::move(observer)});
    return *this;
  }
  Observers& at(Site site, Observer observer) { return at(site, kEveryLayer, std::move(observer)); }
  bool empty() const { return entries_.empty(); }
  bool wants(Site site, int64_t layer) const {
    for (const Entry& e : entries_)
      if (e.matches(site, layer)) return true;
    return false;
  }
  // The value after every observer at (site, layer) has seen it (each sees what the one before left).
  torch::Tensor visit(Site site, int64_t layer, torch::Tensor value) const {
    for (const Entry& e : entries_) {
      if (!e.matches(site, layer)) continue;
      torch::Tensor replaced = e.observer(SiteEvent{site, layer, value});
      if (replaced.defined()) value = std::move(replaced);
    }
    return value;
  }
  // kMixerMap: each observer there reads the map.
  void visit_map(const SiteEvent& event) const {
    for (const Entry& e : entries_)
      if (e.matches(Site::kMixerMap, event.layer)) e.observer(event);
  }

 private:
  struct Entry {
    Site site;
    int64_t layer;
    Observer observer;
    bool matches(Site s, int64_t l) const { return site == s && (layer == kEveryLayer || layer == l); }
  };
  std::vector<Entry> entries_;
};

}  // namespace hsm
