#pragma once
// The engine's plain structs as Qt meta-types, so they travel through queued signals
// between the engine threads and the GUI thread.
#include <QMetaType>
#include <QString>

#include "hsm/diagnostics.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/probe.h"
#include "hsm/run_folder.h"
#include "hsm/system_info.h"
#include "hsm/trainer.h"
#include "hsm/what_if.h"

namespace studio {
// A what-if edit's validation loss next to the trained model's on the same windows (issue 23).
struct WhatIfEvaluation {
  hsm::WhatIf edits;
  hsm::EvalResult trained, edited;  // on the windows asked (the first N)
  // The trained model on every window (run_evaluation.h), when asked; window_count 0: not asked.
  hsm::EvalResult evaluation;
};
}  // namespace studio

Q_DECLARE_METATYPE(hsm::MetricRecord)
Q_DECLARE_METATYPE(hsm::GeneratedToken)
Q_DECLARE_METATYPE(hsm::GenerationResult)
Q_DECLARE_METATYPE(hsm::TrainSummary)
Q_DECLARE_METATYPE(hsm::RunSpec)
Q_DECLARE_METATYPE(hsm::GenerateOptions)
Q_DECLARE_METATYPE(hsm::SystemInfo)
Q_DECLARE_METATYPE(hsm::Diagnosis)
Q_DECLARE_METATYPE(std::vector<hsm::MixerWeights>)
Q_DECLARE_METATYPE(hsm::Probe)
Q_DECLARE_METATYPE(hsm::AblationReport)
Q_DECLARE_METATYPE(hsm::WhatIf)
Q_DECLARE_METATYPE(studio::WhatIfEvaluation)

namespace studio {

// Registers the types above once per process (idempotent).
void register_engine_types();

inline QString qstr(const std::string& s) { return QString::fromStdString(s); }
inline std::string sstr(const QString& s) { return s.toStdString(); }

}  // namespace studio
