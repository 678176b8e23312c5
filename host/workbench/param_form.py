"""A recognizer's settings as a form, generated from its parameter constraints."""
from __future__ import annotations

from PySide6 import QtWidgets

from host.workbench.params import format_value, param_fields, parse_value


class ParamForm(QtWidgets.QWidget):
    """A recognizer's settings, generated from its parameter constraints."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.form = QtWidgets.QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self.kind = None
        self.fields = []
        self.editors = {}

    def set_kind(self, kind: str) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.kind = kind
        self.fields = param_fields(kind)
        self.editors = {}
        for f in self.fields:
            if f.widget == "choice":
                ed = QtWidgets.QComboBox()
                for opt in f.options:
                    ed.addItem("auto" if opt is None else str(opt), opt)
                ed.setCurrentIndex(max(0, ed.findData(f.default)))
            elif f.widget == "bool":
                ed = QtWidgets.QCheckBox()
                ed.setChecked(bool(f.default))
            else:
                ed = QtWidgets.QLineEdit(format_value(f.default))
                if f.optional:
                    ed.setPlaceholderText("auto")
            ed.setToolTip("%s: %s (default %s)" % (f.name, f.hint, f.default))
            self.editors[f.name] = ed
            self.form.addRow(f.name, ed)

    def values(self) -> dict:
        """Every setting as typed (UserError naming a bad one)."""
        out = {}
        for f in self.fields:
            ed = self.editors[f.name]
            if f.widget == "choice":
                out[f.name] = ed.currentData()
            elif f.widget == "bool":
                out[f.name] = ed.isChecked()
            else:
                out[f.name] = parse_value(f, ed.text())
        return out

    def set_values(self, params: dict) -> None:
        for f in self.fields:
            if f.name not in params:
                continue
            ed, v = self.editors[f.name], params[f.name]
            if f.widget == "choice":
                ed.setCurrentIndex(max(0, ed.findData(v)))
            elif f.widget == "bool":
                ed.setChecked(bool(v))
            else:
                ed.setText(format_value(v))
