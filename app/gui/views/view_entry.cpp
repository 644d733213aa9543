#include "gui/views/view_entry.h"

#include <QCoreApplication>

namespace studio {

QString ViewEntry::tabTitle() const { return QCoreApplication::translate("views", title); }
QString ViewEntry::menuLabel() const { return QCoreApplication::translate("views", menuText); }
QString ViewEntry::helpBody() const { return QCoreApplication::translate("help", help); }

}  // namespace studio
