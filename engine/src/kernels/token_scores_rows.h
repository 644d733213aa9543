#pragma once
// The output layer's cross-entropy with each row's own values kept (per-token scoring, issue
// 40): fast_kernels.h's cross_entropy_rows is this with no row outputs.
#include <cstdint>

namespace hsm::fast {

// For each of `rows` rows of x [rows, n] and its target id: adds logsumexp(row) - row[target]
// to *loss_sum, counts rows whose first maximum is at the target into *correct, and, where not
// null, writes row_loss[r] (the term added to *loss_sum) and row_rank[r], the target's rank: 1
// for the row's first maximum (the row counted correct), else 1 + the logits above it + the
// equal ones at lower ids.
void cross_entropy_rows(const float* x, const int64_t* targets, int64_t rows, int64_t n, double* loss_sum,
                        int64_t* correct, double* row_loss, int32_t* row_rank);

}  // namespace hsm::fast
