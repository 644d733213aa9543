#include "gui/starter_run.h"

#include <QCoreApplication>
#include <QDir>

#include "gui/engine_types.h"
#include "gui/views/training_view.h"
#include "gui/widgets/field_error.h"
#include "hsm/errors.h"
#include "hsm/presets.h"
#include "hsm/settings.h"

namespace studio {

QString startStarterRun(TrainingView* view) {
  auto tr = [](const char* text) { return QCoreApplication::translate("StarterRun", text); };
  const QString corpus = qstr(hsm::starter_corpus());
  if (corpus.isEmpty())
    return tr("The starter corpus is not installed (looked for %1). Choose a corpus in the Training view.")
        .arg(QDir(qstr(hsm::resources_dir())).filePath(QStringLiteral("corpus/tinystories-starter.txt")));
  const QString preset = QString::fromLatin1(hsm::kStarterPreset);
  if (!view->setModel(preset)) return view->fieldError(QStringLiteral("preset"))->text();
  hsm::TrainSettings settings;
  try {
    settings = hsm::preset_train_settings(hsm::kStarterPreset);
  } catch (const std::exception& e) {
    return QString::fromStdString(hsm::error_text(e));
  }
  // The preset's settings fill the form as if typed; the device and thread count are this
  // machine's (Preferences) and stay as they are.
  for (const hsm::SettingSpec& s : hsm::train_setting_specs()) {
    const QString key = QString::fromLatin1(s.key);
    if (key != QLatin1String("device") && key != QLatin1String("threads")) view->setField(key, qstr(s.get(settings)));
  }
  view->setField(QStringLiteral("tokenizer"), QString());  // a new tokenizer, sized by the preset
  view->setCorpus(corpus);
  if (!view->start())  // a refused field or a run already training, in the view's words
    return view->lastError().isEmpty() ? tr("Some fields of the Training view need attention.") : view->lastError();
  return {};
}

}  // namespace studio
