#include "gui/widgets/field_error.h"

namespace studio {

FieldError::FieldError(const QString& field, QWidget* parent) : QLabel(parent) {
  setObjectName(field + QStringLiteral("_error"));
  setStyleSheet(QStringLiteral("color: #c0392b;"));
  setWordWrap(true);
  hide();
}

void FieldError::showError(const QString& message) {
  setText(message);
  setVisible(!message.isEmpty());
}

void FieldError::clearError() {
  clear();
  hide();
}

}  // namespace studio
