#pragma once
// The message under a form field that refused its value: red, visible only when there is
// something to say, and named after the field so tests and screen readers can find it.
#include <QLabel>

namespace studio {

class FieldError : public QLabel {
  Q_OBJECT
 public:
  explicit FieldError(const QString& field, QWidget* parent = nullptr);
  void showError(const QString& message);
  void clearError();
  bool hasError() const { return !text().isEmpty(); }
};

}  // namespace studio
