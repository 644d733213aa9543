// The torch-free half of diagnostics.h: DA §4.4's indicators from L×L matrices, their
// min-max normalisation across layers (DA footnote 3) and the (a,b) offset weights of
// HSM §3.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "hsm/diagnostics.h"

namespace hsm {
namespace {

void check_square(size_t size, int64_t L, const char* what) {
  if (L < 1 || size != static_cast<size_t>(L) * static_cast<size_t>(L))
    throw std::invalid_argument(std::string(what) + ": a matrix of " + std::to_string(size) +
                                " values is not L×L for L = " + std::to_string(L));
}

}  // namespace

const char* matrix_kind_name(MatrixKind k) {
  switch (k) {
    case MatrixKind::kAttention:
      return "attention";
    case MatrixKind::kLinear:
      return "linear";
    case MatrixKind::kJacobian:
      return "jacobian";
  }
  return "?";
}

MatrixKind matrix_kind(MixerKind mixer) { return mixer_info(mixer).matrix; }

Indicators head_indicators(const std::vector<float>& A, int64_t L) {
  check_square(A.size(), L, "head_indicators");
  auto at = [&](int64_t i, int64_t k) { return static_cast<double>(A[static_cast<size_t>(i * L + k)]); };
  Indicators r;
  double squares = 0;
  for (float v : A) {
    const double a = v;
    if (a > 0) r.entropy -= a * std::log(a);
    squares += a * a;
  }
  r.conc = std::sqrt(squares);
  for (int64_t i = 0; i < L; ++i) r.sink += at(i, 0);
  r.sink /= static_cast<double>(L);
  for (int64_t N = 0; N < 4; ++N) {
    if (L <= N) continue;
    double sum = 0;
    for (int64_t i = N; i < L; ++i) sum += at(i, i - N);
    r.locfoc[static_cast<size_t>(N)] = sum / static_cast<double>(L - N);
  }
  return r;
}

double head_diversity(const std::vector<std::vector<float>>& heads, int64_t L) {
  for (const auto& h : heads) check_square(h.size(), L, "head_diversity");
  if (heads.size() < 2) return 0;
  const auto n = static_cast<double>(heads.size());
  double sum = 0;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t k = 0; k <= i; ++k) {
      const auto idx = static_cast<size_t>(i * L + k);
      double mean = 0;
      for (const auto& h : heads) mean += h[idx];
      mean /= n;
      double var = 0;
      for (const auto& h : heads) var += (h[idx] - mean) * (h[idx] - mean);
      sum += std::sqrt(var / n);  // population std
    }
  return 2.0 * sum / (static_cast<double>(L) * static_cast<double>(L + 1));
}

Indicators layer_indicators(const std::vector<std::vector<float>>& heads, int64_t L) {
  Indicators r;
  if (heads.empty()) return r;
  for (const auto& h : heads) {
    const Indicators one = head_indicators(h, L);
    r.entropy += one.entropy;
    r.conc += one.conc;
    r.sink += one.sink;
    for (size_t N = 0; N < r.locfoc.size(); ++N) r.locfoc[N] += one.locfoc[N];
  }
  const auto n = static_cast<double>(heads.size());
  r.entropy /= n;
  r.conc /= n;
  r.sink /= n;
  for (double& v : r.locfoc) v /= n;
  r.headdiv = head_diversity(heads, L);
  return r;
}

void normalise_rows(std::vector<float>& M, int64_t L) {
  check_square(M.size(), L, "normalise_rows");
  for (int64_t i = 0; i < L; ++i) {
    float* row = M.data() + i * L;
    double sum = 0;
    for (int64_t k = 0; k < L; ++k) sum += std::fabs(row[k]);
    for (int64_t k = 0; k < L; ++k) row[k] = sum > 0 ? static_cast<float>(std::fabs(row[k]) / sum) : 0.0f;
  }
}

void normalise_across_layers(std::vector<LayerDiagnostics>& layers) {
  // Min-max over the model's layers of one indicator; 0 everywhere when all are equal.
  auto normalise = [&](double Indicators::*field) {
    if (layers.empty()) return;
    double lo = layers[0].indicators.*field, hi = lo;
    for (const auto& l : layers) {
      lo = std::min(lo, l.indicators.*field);
      hi = std::max(hi, l.indicators.*field);
    }
    for (auto& l : layers) l.normalised.*field = hi > lo ? (l.indicators.*field - lo) / (hi - lo) : 0.0;
  };
  for (auto& l : layers) l.normalised = l.indicators;  // SINK and LocFoc stay raw
  normalise(&Indicators::entropy);
  normalise(&Indicators::conc);
  normalise(&Indicators::headdiv);
}

std::vector<double> offset_weights(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw std::invalid_argument("offset_weights: " + std::to_string(a.size()) + " values of a but " +
                                std::to_string(b.size()) + " of b (one each per layer)");
  if (a.size() > 20) throw std::invalid_argument("offset_weights: at most 20 layers (2^20 offsets)");
  const size_t n = a.size(), count = size_t{1} << n;
  std::vector<double> w(count, 1.0);
  for (size_t k = 0; k < count; ++k)
    for (size_t l = 0; l < n; ++l) w[k] *= (k >> l) & 1 ? b[l] : 1.0 + a[l];  // shifted branch or residual + a
  return w;
}

std::vector<double> offset_weights(const std::vector<MixerWeights>& layers) {
  std::vector<double> a, b;
  for (const auto& l : layers) {
    // The offset weights' product holds for one scalar a and b per layer and the stack position's
    // shift 2^l: the shift family's single-shift mixers with scalar weights (HSM (a,b)).
    if (!is_mixer_id(l.mixer) || l.a.size() != 1 || l.b.size() != 1) return {};
    const MixerInfo& info = mixer_info(l.mixer);
    if (info.family != MixerFamily::kShift || info.shift_per_head || info.multi_head) return {};
    a.push_back(l.a[0]);
    b.push_back(l.b[0]);
  }
  if (a.empty()) return {};
  return offset_weights(a, b);
}

}  // namespace hsm
