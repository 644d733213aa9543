// Precompiled header of the engine's LibTorch translation units (docs/architecture.md, "Layers": including
// <torch/torch.h> costs ~20 s per file on two cores; precompiled, it costs ~1 s).
#pragma once
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
