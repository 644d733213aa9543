#include "gui/views/diagnosis_state.h"

#include <QFileInfo>
#include <stdexcept>
#include <utility>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "hsm/prober.h"

namespace studio {

DiagnosisState::DiagnosisState(EngineHost* engine, QObject* parent) : QObject(parent), engine_(engine) {}

void DiagnosisState::clear(const QString& runDir) {
  runDir_ = runDir;
  has_ = false;
  diagnosis_ = {};
  example_ = {};
}

void DiagnosisState::start(const std::string& prompt, const std::string& task, int example) {
  running_ = true;
  // A call of its own on the interactive thread, answered to this side alone. The current
  // run's kind says what the prompt is: its text, or for a task run test example N of its task
  // (a compared run is diagnosed on the same example, so it must be a run of the same task).
  using Diagnosed = std::pair<hsm::Diagnosis, hsm::TaskPrompt>;
  engine_->interactive()
      .call<Diagnosed>(runDir_,
                       [prompt, task, index = example](const CallContext& context) {
                         const hsm::Prober prober(context.model());
                         if (task.empty()) return Diagnosed{prober.diagnose(prompt), {}};
                         const hsm::Task* own = context.model()->task();
                         if (!own || own->spec() != task)
                           throw std::invalid_argument(
                               sstr(QFileInfo(context.runDir()).fileName()) + " was trained on " +
                               (own ? "another task (" + own->spec() + ")" : std::string("a corpus")) +
                               ": compare it with a run of the same task (" + task + ")");
                         hsm::TaskPrompt example = prober.task_prompt(index);
                         hsm::Diagnosis d = prober.diagnose_tokens(example.tokens);
                         return Diagnosed{std::move(d), std::move(example)};
                       })
      .then(this,
            [this, dir = runDir_](const Diagnosed& d) {
              running_ = false;
              if (runDir_ != dir) {  // this side follows another run now: the answer is of the one it left
                emit answeredForARunLeft();
                return;
              }
              diagnosis_ = d.first;
              example_ = d.second;
              has_ = true;
              emit diagnosed();
            })
      .onFailed(this, [this](const CallFailed& e) {
        running_ = false;
        emit failed(e.message());
      });
}

}  // namespace studio
