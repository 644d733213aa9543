// Precompiled header of the GUI library: Qt Widgets and QCustomPlot are large and every
// view includes them. No LibTorch here or anywhere in app/ (docs/architecture.md, "Layers").
#pragma once
#include <QtWidgets>
#include <qcustomplot.h>
