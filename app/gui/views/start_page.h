#pragma once
// What the studio shows with nothing loaded: train a small model at once on the bundled
// starter corpus, open a run folder (or a recent one), or pick a preset and a corpus and go to
// training with them filled in.
#include <QWidget>

class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;

namespace studio {

class StartPage : public QWidget {
  Q_OBJECT
 public:
  explicit StartPage(QWidget* parent = nullptr);
  void refreshRecent();

 signals:
  void openRunRequested();
  void openRecentRequested(const QString& dir);
  void trainRequested(const QString& preset, const QString& corpus);
  void trainStarterRequested();  // "Train a small model now"

 private:
  // The constructor's steps.
  QLabel* buildTitle();
  QGroupBox* buildQuickStart();  // "Train a small model now"
  QGroupBox* buildOpenCard();    // Open run folder…, the recent runs
  QGroupBox* buildTrainCard();   // a preset, a corpus, Set up training
  static QString whatHappensNext();
  void layOut(QLabel* title, QGroupBox* quick, QGroupBox* open, QGroupBox* train);

  QListWidget* recent_;
  QComboBox* preset_;
  QLineEdit* corpus_;
};

}  // namespace studio
