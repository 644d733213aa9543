// The mixer registry: every mixer described in one place, an entry each (docs/adding-a-mixer.md).
// The engine, the CLI and the studio ask these entries (parameter counts, costs, caches,
// shifts, the diagnostics' matrix) and never name a mixer; the module that computes it is
// built by make_mixer (model/mixers/mixer.cpp).
#include "hsm/mixer_kind.h"

#include <algorithm>
#include <stdexcept>

#include "hsm/params.h"

namespace hsm {
namespace {

int64_t linear(int64_t in, int64_t out, bool bias = true) { return in * out + (bias ? out : 0); }

// Costs shared by several entries.
int64_t attention_params(int64_t d, int64_t, int64_t) { return linear(d, 3 * d) + linear(d, d); }  // q,k,v + out
int64_t qk_source_params(int64_t d, int64_t, int64_t) {
  return linear(d, 2 * d) + linear(d, d) + linear(d, d);  // q,k (from the source), v, output
}
int64_t attention_macs(int64_t d, int64_t, int64_t T) { return 4 * d * d + 2 * T * d; }
int64_t qk_source_macs(int64_t d, int64_t, int64_t T) { return 2 * d * d + 2 * T * d; }
int64_t keys_values_cache(int64_t d, int64_t, int64_t, int64_t T, int64_t B) { return 2 * B * T * d; }
int64_t shared_qk_cache(int64_t d, int64_t, int64_t, int64_t T, int64_t B) {
  return B * T * d + 2 * T * d;  // values per sequence; queries and keys shared by the batch
}
int64_t no_cache(int64_t, int64_t, int64_t, int64_t, int64_t) { return 0; }
std::vector<int64_t> no_shifts(int64_t, int64_t) { return {}; }
std::vector<int64_t> one_shift(int64_t layer, int64_t) { return {int64_t{1} << layer}; }
// A ring of the last R inputs, R = the layer's largest shift.
template <std::vector<int64_t> (*Shifts)(int64_t, int64_t)>
int64_t ring_cache(int64_t d, int64_t h, int64_t layer, int64_t, int64_t B) {
  const auto s = Shifts(layer, h);
  return B * (s.empty() ? 0 : *std::max_element(s.begin(), s.end())) * d;
}
// The extractors keep their last `context` inputs (B·T·d; he keeps x W_in_ext).
int64_t window_cache(int64_t d, int64_t, int64_t, int64_t T, int64_t B) { return B * T * d; }

MixerInfo shift_mixer(MixerKind kind, const char* id, const char* title, const char* equation, int64_t heads,
                      int64_t ffn, MatrixKind matrix) {
  MixerInfo m{};
  m.kind = kind, m.id = id, m.title = title, m.equation = equation, m.family = MixerFamily::kShift;
  m.default_heads = heads, m.paper_ffn = ffn, m.multi_head = heads > 1, m.reads_all_earlier = false;
  m.qk_source = QkSource::kSelf, m.matrix = matrix, m.matrix_note = "";
  m.cache_floats = ring_cache<one_shift>, m.shifts = one_shift, m.shift_per_head = false;
  return m;
}

MixerInfo reading_mixer(MixerKind kind, const char* id, const char* title, const char* equation, MixerFamily family,
                        int64_t heads, MatrixKind matrix) {
  MixerInfo m{};
  m.kind = kind, m.id = id, m.title = title, m.equation = equation, m.family = family;
  m.default_heads = heads, m.paper_ffn = 512, m.multi_head = heads > 1, m.reads_all_earlier = true;
  m.qk_source = QkSource::kSelf, m.matrix = matrix, m.matrix_note = "";
  m.shifts = no_shifts, m.shift_per_head = false;
  return m;
}

std::vector<MixerInfo> registry() {
  std::vector<MixerInfo> r;
  // ---- GPT: standard causal softmax attention (HSM Table 1's baseline, 8 heads, FFN 512).
  {
    MixerInfo m = reading_mixer(MixerKind::Attention, "attn", "GPT softmax attention", "Vaswani et al. (2017)",
                                MixerFamily::kAttention, 8, MatrixKind::kAttention);
    m.params = attention_params, m.macs_per_token = attention_macs, m.cache_floats = keys_values_cache;
    m.fast_decode = FastDecodeForm::kAttention;
    m.formula = "y_i = Σ_{j≤i} softmax_j(q_i·k_j / √d_head) v_j, per head; q, k, v linear maps of x";
    r.push_back(m);
  }
  // ---- HSM (Table 1): layer l mixes x_t with x_{t−2^l}; ring caches of the last 2^l inputs.
  {
    MixerInfo m = shift_mixer(MixerKind::ShiftAB, "hsm_ab", "HSM (a,b)", "HSM eq. 1", 1, 1024, MatrixKind::kLinear);
    m.params = [](int64_t, int64_t, int64_t) -> int64_t { return 2; };
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 2 * d; };
    m.fast_decode = FastDecodeForm::kShiftWeighted;
    m.formula = "y = a·x + b·x_shifted, x_shifted[t] = x[t − s], s = 2^layer; a, b one number each per layer";
    r.push_back(m);
  }
  {
    MixerInfo m = shift_mixer(MixerKind::ShiftABVector, "hsm_ab_vec", "HSM (a,b) vector", "HSM eq. 2", 1, 1024,
                              MatrixKind::kLinear);
    m.params = [](int64_t d, int64_t, int64_t) { return 2 * d; };
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 2 * d; };
    m.fast_decode = FastDecodeForm::kShiftWeighted;
    m.formula = "y = a ⊙ x + b ⊙ x_shifted, s = 2^layer; a, b one weight per channel";
    r.push_back(m);
  }
  {
    MixerInfo m = shift_mixer(MixerKind::ShiftABMatrix, "hsm_AB", "HSM (A,B)", "HSM eq. 3", 1, 640, MatrixKind::kLinear);
    m.params = [](int64_t d, int64_t, int64_t) { return 2 * d * d + d + linear(d, d); };  // A, B, bias + output
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 3 * d * d; };
    m.fast_decode = FastDecodeForm::kShiftMatrix;
    m.formula = "y = A x + B x_shifted + bias, s = 2^layer; A, B full d×d matrices";
    r.push_back(m);
  }
  {
    MixerInfo m = shift_mixer(MixerKind::ShiftGate1, "hsm_gate1", "HSM single input gate", "HSM eq. 4", 1, 768,
                              MatrixKind::kJacobian);
    m.params = [](int64_t d, int64_t, int64_t) { return 2 * linear(d, d); };
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 2 * d * d + 2 * d; };
    m.fast_decode = FastDecodeForm::kShiftGate;
    m.formula = "gate = tanh(mlp(x)); y = gate ⊙ x + (1 − gate) ⊙ x_shifted, s = 2^layer";
    r.push_back(m);
  }
  {
    MixerInfo m = shift_mixer(MixerKind::ShiftGate2, "hsm_gate2", "HSM double input gate", "HSM eq. 5", 4, 960,
                              MatrixKind::kJacobian);
    m.params = [](int64_t d, int64_t h, int64_t) { return h * linear(2 * (d / h), d / h); };
    m.macs_per_token = [](int64_t d, int64_t h, int64_t) { return 2 * d * d / h + 2 * d; };
    m.fast_decode = FastDecodeForm::kShiftHeadGate;
    m.formula = "gate = tanh(L[x; x_shifted]); y = gate ⊙ x + (1 − gate) ⊙ x_shifted, per head, s = 2^layer";
    r.push_back(m);
  }
  {
    MixerInfo m =
        shift_mixer(MixerKind::ShiftFusion, "hsm_fusion", "HSM fusion", "HSM eq. 6", 4, 960, MatrixKind::kJacobian);
    m.params = [](int64_t d, int64_t h, int64_t) { return h * (linear(2 * (d / h), d / h) + linear(d / h, d / h)); };
    m.macs_per_token = [](int64_t d, int64_t h, int64_t) { return 3 * d * d / h; };
    m.fast_decode = FastDecodeForm::kShiftHeadFusion;
    m.formula = "y = mlp([x; x_shifted]) per head, s = 2^layer";
    r.push_back(m);
  }
  {  // head j shifts by 2^j in every layer (HSM §4)
    MixerInfo m = shift_mixer(MixerKind::ShiftABMultihead, "hsm_ab_mh", "HSM (a,b) multihead", "HSM §4", 8, 1024,
                              MatrixKind::kLinear);
    m.params = [](int64_t, int64_t h, int64_t) { return 2 * h; };
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 2 * d; };
    m.shifts = [](int64_t, int64_t h) {
      std::vector<int64_t> s;
      for (int64_t j = 0; j < h; ++j) s.push_back(int64_t{1} << j);
      return s;
    };
    m.cache_floats = [](int64_t d, int64_t h, int64_t, int64_t, int64_t B) { return B * (int64_t{1} << (h - 1)) * d; };
    m.shift_per_head = true;
    m.fast_decode = FastDecodeForm::kShiftWeighted;
    m.formula = "head h: y_h = a_h·x_h + b_h·x_h[t − 2^h]; every layer the same shifts 1, 2, 4, …";
    r.push_back(m);
  }
  {  // rotating permutation (HSM §7): layer l, head j shifts by 2^((j + l) mod H)
    MixerInfo m = shift_mixer(MixerKind::ShiftABMultiheadExt, "hsm_ab_mh_ext", "HSM (a,b) multihead-ext", "HSM §7",
                              8, 1024, MatrixKind::kLinear);
    m.params = [](int64_t, int64_t h, int64_t) { return 2 * h; };
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 2 * d; };
    m.shifts = [](int64_t layer, int64_t h) {
      std::vector<int64_t> s;
      for (int64_t j = 0; j < h; ++j) s.push_back(int64_t{1} << ((j + layer) % h));
      return s;
    };
    m.cache_floats = [](int64_t d, int64_t h, int64_t, int64_t, int64_t B) { return B * (int64_t{1} << (h - 1)) * d; };
    m.shift_per_head = true;
    m.fast_decode = FastDecodeForm::kShiftWeighted;
    m.formula = "head h: y_h = a_h·x_h + b_h·x_h[t − s_h], the shifts s_h differing between layers";
    r.push_back(m);
  }
  // ---- DA (Deconstructing Attention §3; 8 heads like attn, FFN 512; docs/mixers.md). Their
  // matrices are real attention matrices: softmax weights, and taylor's normalised
  // linear-attention weights (1 + s + s²/2 over the row's sum: positive, rows sum to 1).
  {  // FC_Dn(SiLU(FC_Gt(x)) ⊙ FC_Up(x)): no token mixing; ‖∂y_i/∂x_k‖ is zero off the diagonal
    MixerInfo m = reading_mixer(MixerKind::GatedMlp, "mlp", "DA gated MLP (no token mixing)", "DA eq. 4-5",
                                MixerFamily::kDeconstructedAttention, 1, MatrixKind::kJacobian);
    m.reads_all_earlier = false;
    m.params = [](int64_t d, int64_t, int64_t) {
      const int64_t f = gated_mlp_width(d);
      return 2 * linear(d, f) + linear(f, d);  // FC_Gt, FC_Up, FC_Dn
    };
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 3 * d * gated_mlp_width(d); };
    m.cache_floats = no_cache;
    m.formula = "y = FC_down(SiLU(FC_gate(x)) ⊙ FC_up(x)): no token mixing at all";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::Taylor, "taylor", "DA approximate (2nd-order Taylor)",
                                "DA eq. 6, appx. I eq. 14-17", MixerFamily::kDeconstructedAttention, 8,
                                MatrixKind::kAttention);
    m.matrix_note = "Taylor: 1 + s + s²/2 over the row's sum, not a softmax";
    m.params = attention_params;
    m.macs_per_token = [](int64_t d, int64_t h, int64_t) {
      return 4 * d * d + 2 * h * taylor_feature_dim(d / h) * (d / h + 1);
    };
    m.cache_floats = [](int64_t d, int64_t h, int64_t, int64_t, int64_t B) {
      return B * h * taylor_feature_dim(d / h) * (d / h + 1);  // Σφ(k)vᵀ, Σφ(k)
    };
    m.formula = "w_ij = 1 + s_ij + s_ij²/2, s_ij = q_i·k_j/√d_head; y_i = Σ_{j≤i} w_ij v_j / Σ_{j≤i} w_ij";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::NonApprox, "nonapprox", "DA non-approximate", "DA eq. 7-8, 18",
                                MixerFamily::kDeconstructedAttention, 8, MatrixKind::kAttention);
    m.params = attention_params;
    m.macs_per_token = [](int64_t d, int64_t, int64_t) { return 4 * d * d + 3 * d; };
    m.cache_floats = [](int64_t d, int64_t h, int64_t, int64_t, int64_t B) {
      return B * h * (d / h + 2);  // running max, Σe·v, Σe
    };
    m.formula = "s_j = Σ SiLU(q_j) ⊙ k_j / √d_head; y_i = Σ_{j≤i} e^{s_j} v_j / Σ_{j≤i} e^{s_j}";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::RndEmbQK, "rnd_emb_qk", "DA RndEmbQK", "DA eq. 9-10",
                                MixerFamily::kDeconstructedAttention, 8, MatrixKind::kAttention);
    m.qk_source = QkSource::kRandom;
    m.params = qk_source_params, m.macs_per_token = qk_source_macs, m.cache_floats = shared_qk_cache;
    m.formula = "softmax attention whose q, k come from fixed random vectors, not from the text";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::FixedSeqQK, "fixed_seq_qk", "DA FixedSeqQK", "DA eq. 11-12",
                                MixerFamily::kDeconstructedAttention, 8, MatrixKind::kAttention);
    m.qk_source = QkSource::kFixedText;
    m.params = qk_source_params, m.macs_per_token = qk_source_macs, m.cache_floats = shared_qk_cache;
    m.formula = "softmax attention whose q, k come from one fixed text, not from the input";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::StaticEmbQK, "static_emb_qk", "DA StaticEmbQK", "DA eq. 13",
                                MixerFamily::kDeconstructedAttention, 8, MatrixKind::kAttention);
    m.qk_source = QkSource::kEmbedding;
    m.params = qk_source_params, m.macs_per_token = attention_macs, m.cache_floats = keys_values_cache;
    m.formula = "softmax attention whose q, k come from the token embeddings only";
    r.push_back(m);
  }
  // ---- EX (Extractors §5; one head, FFN 512 as in EX Table 1). Parameters: EX Tables 3–4 (no
  // biases); MACs: EX Tables 5–6 (a new token at length T, the summand at t = T). she, he and
  // we multiply two maps of x in their adjustment, so their matrix is a Jacobian; me is linear.
  {
    MixerInfo m = reading_mixer(MixerKind::ExtractorSHE, "she", "EX super high-performance Extractor",
                                "EX eq. 23-25", MixerFamily::kExtractor, 1, MatrixKind::kJacobian);
    m.params = [](int64_t d, int64_t, int64_t l) { return l * d * d + 2 * d * d; };  // W_1..W_l, W_adj, W_out
    m.macs_per_token = [](int64_t d, int64_t, int64_t T) { return T * d * d + 2 * d * d + d; };
    m.cache_floats = window_cache;
    m.formula = "e_i = Σ_{j≤i} x_j W_{i−j+1}; y = ((x W_adj) ⊙ e) W_out";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::ExtractorHE, "he", "EX higher-performance Extractor",
                                "EX eq. 27, 28, 24, 25", MixerFamily::kExtractor, 1, MatrixKind::kJacobian);
    m.params = [](int64_t d, int64_t, int64_t l) { return l * d + 3 * d * d; };  // w_1..w_l, W_in_ext, W_adj, W_out
    m.macs_per_token = [](int64_t d, int64_t, int64_t T) { return T * d + 3 * d * d + d; };
    m.cache_floats = window_cache;
    m.formula = "u = x W_in; e_i = Σ_{j≤i} u_j ⊙ w_{i−j+1}; y = ((x W_adj) ⊙ e) W_out";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::ExtractorWE, "we", "EX worthwhile Extractor", "EX eq. 26, 24, 25",
                                MixerFamily::kExtractor, 1, MatrixKind::kJacobian);
    m.params = [](int64_t d, int64_t, int64_t l) { return l * d + 2 * d * d; };  // w_1..w_l, W_adj, W_out
    m.macs_per_token = [](int64_t d, int64_t, int64_t T) { return T * d + 2 * d * d + d; };
    m.cache_floats = window_cache;
    m.formula = "e_i = Σ_{j≤i} x_j ⊙ w_{i−j+1}; y = ((x W_adj) ⊙ e) W_out";
    r.push_back(m);
  }
  {
    MixerInfo m = reading_mixer(MixerKind::ExtractorME, "me", "EX minimalist Extractor", "EX eq. 29",
                                MixerFamily::kExtractor, 1, MatrixKind::kLinear);
    m.params = [](int64_t, int64_t, int64_t l) { return l; };  // w_1..w_l
    m.macs_per_token = [](int64_t d, int64_t, int64_t T) { return T * d; };
    m.cache_floats = window_cache;
    m.formula = "y_i = Σ_{j≤i} w_{i−j+1} x_j, one number per distance";
    r.push_back(m);
  }
  return r;
}

}  // namespace

const std::vector<MixerInfo>& all_mixers() {
  static const std::vector<MixerInfo> mixers = registry();
  return mixers;
}

const MixerInfo& mixer_info(const std::string& id) {
  for (const auto& m : all_mixers())
    if (id == m.id) return m;
  std::string known;
  for (const auto& m : all_mixers()) known += std::string(known.empty() ? "" : ", ") + m.id;
  throw std::invalid_argument("unknown mixer '" + id + "' (known: " + known + ")");
}

const MixerInfo& mixer_info(MixerKind kind) {
  for (const auto& m : all_mixers())
    if (m.kind == kind) return m;
  throw std::logic_error("mixer kind without an entry in all_mixers()");
}

bool is_mixer_id(const std::string& id) {
  for (const auto& m : all_mixers())
    if (id == m.id) return true;
  return false;
}

bool is_da_mixer(MixerKind kind) { return mixer_info(kind).family == MixerFamily::kDeconstructedAttention; }
bool is_extractor(MixerKind kind) { return mixer_info(kind).family == MixerFamily::kExtractor; }
bool is_shift_mixer(MixerKind kind) { return mixer_info(kind).family == MixerFamily::kShift; }
bool reads_all_earlier(MixerKind kind) { return mixer_info(kind).reads_all_earlier; }
QkSource qk_source(MixerKind kind) { return mixer_info(kind).qk_source; }

int64_t taylor_feature_dim(int64_t hd) { return 1 + hd + hd * (hd + 1) / 2; }

std::vector<int64_t> layer_shifts(MixerKind kind, int64_t layer, int64_t heads) {
  return mixer_info(kind).shifts(layer, heads);
}

}  // namespace hsm
