#include "gui/views/sweep_form.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QObject>
#include <QStringList>

namespace studio {
namespace {

// One value as written in the form: JSON when it reads as JSON (3, 0.003, true, "a,b"), else text.
QJsonValue form_value(const QString& text) {
  const QJsonDocument d = QJsonDocument::fromJson(QStringLiteral("[%1]").arg(text).toUtf8());
  if (d.isArray() && d.array().size() == 1) return d.array().first();
  return QJsonValue(text);
}

// Splits "a, b, \"c,d\"" at the commas outside quotes and brackets.
QStringList split_values(const QString& text) {
  QStringList out;
  QString cur;
  int depth = 0;
  bool quoted = false;
  for (QChar c : text) {
    if (c == QLatin1Char('"')) quoted = !quoted;
    if (!quoted && (c == QLatin1Char('[') || c == QLatin1Char('{'))) ++depth;
    if (!quoted && (c == QLatin1Char(']') || c == QLatin1Char('}'))) --depth;
    if (c == QLatin1Char(',') && !quoted && depth == 0) {
      out << cur.trimmed();
      cur.clear();
    } else {
      cur += c;
    }
  }
  out << cur.trimmed();
  return out;
}

}  // namespace

QString sweep_spec_json(const SweepForm& form, QString* error) {
  QJsonObject spec;
  spec[QStringLiteral("name")] = form.name.trimmed().isEmpty() ? QStringLiteral("sweep") : form.name.trimmed();
  const QString base = form.base.trimmed();
  spec[QStringLiteral("base")] = base.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)
                                     ? QJsonObject{{QStringLiteral("config"), base}}
                                     : QJsonObject{{QStringLiteral("preset"), base}};
  if (!form.task.trimmed().isEmpty())
    spec[QStringLiteral("task")] = form.task.trimmed();
  else
    spec[QStringLiteral("data")] = form.data.trimmed();
  spec[QStringLiteral("train")] = QJsonObject{{QStringLiteral("steps"), form.steps},
                                              {QStringLiteral("batch"), form.batch},
                                              {QStringLiteral("eval_every"), form.evalEvery}};
  QJsonObject axes;
  const QStringList lines = form.axes.split(QLatin1Char('\n'));
  for (int i = 0; i < lines.size(); ++i) {
    const QString line = lines[i].trimmed();
    if (line.isEmpty() || line.startsWith(QLatin1Char('#'))) continue;
    const int eq = line.indexOf(QLatin1Char('='));
    const QString path = line.left(eq).trimmed();
    const QString rest = line.mid(eq + 1).trimmed();
    if (eq < 0 || path.isEmpty()) {
      *error = QObject::tr("axes line %1: \"%2\" is not \"path = v1, v2\"; e.g. model.layers.0.mixer = attn, hsm_ab")
                   .arg(i + 1)
                   .arg(line);
      return {};
    }
    QJsonArray values;
    if (rest.startsWith(QLatin1Char('['))) {
      const QJsonDocument d = QJsonDocument::fromJson(rest.toUtf8());
      if (!d.isArray()) {
        *error = QObject::tr("axes line %1 (%2): %3 is not a JSON list").arg(i + 1).arg(path, rest);
        return {};
      }
      values = d.array();
    } else {
      for (const QString& v : split_values(rest)) {
        if (v.isEmpty()) {
          *error = QObject::tr("axes line %1 (%2): an empty value; write path = v1, v2").arg(i + 1).arg(path);
          return {};
        }
        values.append(form_value(v));
      }
    }
    axes[path] = values;
  }
  if (axes.isEmpty()) {
    *error = QObject::tr("no axes: write one a line, e.g. seed = 1, 2");
    return {};
  }
  spec[QStringLiteral("axes")] = axes;
  return QString::fromUtf8(QJsonDocument(spec).toJson(QJsonDocument::Indented));
}

}  // namespace studio
