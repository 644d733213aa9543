// Issue 23 in the studio: the what-if edits of the Weights view and the Playground, driven
// through their widgets on the tiny trained model (hsm_ab, attn, hsm_ab) and checked against
// Session::edited; the run folder stays byte-identical.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QCryptographicHash>
#include <QDirIterator>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTableWidget>
#include <qcustomplot.h>

#include <thread>

#include "gui/engine/engine_host.h"
#include "gui/engine/model_store.h"
#include "gui/run_list.h"
#include "gui/views/diagnostics_timeline.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/playground_view.h"
#include "gui/views/probe_view.h"
#include "gui/views/weights_view.h"
#include "gui/views/what_if_editor.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/receptive_field_diagram.h"
#include "gui/widgets/token_text.h"
#include "hsm/diagnostics_log.h"
#include "hsm/run_folder.h"
#include "hsm/session.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

// SHA-256 of every file under a folder, by relative path.
QMap<QString, QByteArray> hash_folder(const QString& dir) {
  QMap<QString, QByteArray> out;
  QDirIterator it(dir, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) continue;
    out[QDir(dir).relativeFilePath(path)] = QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
  }
  return out;
}

// Opens `run` as the current run and shows `view` at a size where every panel has room.
template <class View>
void show_on(RunList& runs, View& view, const QString& run) {
  runs.setCurrent(runs.open(run));
  view.resize(1400, 900);
  view.show();
}

// The Weights view on a run, shown; ready() once its weights are read.
struct WeightsStudio {
  explicit WeightsStudio(const QString& run) { show_on(runs, view, run); }
  bool ready() {
    return wait_for([&] { return !view.weights().empty() && !view.isWaiting(); });
  }
  RunList runs;
  EngineHost engine;
  WeightsView view{&runs, &engine};
};

// Issue 35: the interactive and analysis workers take a run's model from one store: loaded
// once for both (at the same time too), loaded again for a new checkpoint or device, and gone
// when no worker holds it.
TEST(ModelStore, TwoWorkersShareOneLoadedModelPerRun) {
  const std::string run = trained_run().toStdString();
  ModelStore store;
  std::shared_ptr<const hsm::Model> first, second;
  std::thread interactive([&] { first = store.model(run, 1, "cpu"); });
  std::thread analysis([&] { second = store.model(run, 1, "cpu"); });
  interactive.join();
  analysis.join();
  ASSERT_TRUE(first);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(store.model(run, 1, "cpu").get(), first.get());
  std::shared_ptr<const hsm::Model> newer = store.model(run, 2, "cpu");  // a new checkpoint of the run
  EXPECT_NE(newer.get(), first.get());
  EXPECT_EQ(store.model(run, 2, "cpu").get(), newer.get());
  std::weak_ptr<const hsm::Model> gone = newer;
  first.reset();
  second.reset();
  newer.reset();
  EXPECT_TRUE(gone.expired());  // the store keeps no model alive
  EXPECT_THROW(store.model(run + "/missing", 1, "cpu"), std::exception);
}

}  // namespace
