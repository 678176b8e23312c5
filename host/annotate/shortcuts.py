"""The annotator's keyboard: what each key does (see the keys in
host/annotate/window.py's docstring).

``KeyboardShortcuts`` is a part of ``host.annotate.window.AnnotatorWindow`` (a mixin);
the window catches key presses (its ``eventFilter`` and ``keyPressEvent``) and hands
them to ``handle_key``.
"""
from __future__ import annotations

from PySide6 import QtCore

from host.annotate.video_view import SPEEDS


class KeyboardShortcuts:
    """Key bindings of the annotator window."""

    def handle_key(self, event) -> bool:
        """Do what the key of ``event`` (a QKeyEvent) means; return whether it was ours."""
        key = event.key()
        mods = event.modifiers()
        K = QtCore.Qt.Key
        ctrl = bool(mods & QtCore.Qt.KeyboardModifier.ControlModifier)
        shift = bool(mods & QtCore.Qt.KeyboardModifier.ShiftModifier)
        if ctrl:
            if key == K.Key_Z:
                (self.undo_stack.redo if shift else self.undo_stack.undo)()
                return True
            if key == K.Key_Y:
                self.undo_stack.redo()
                return True
            if key == K.Key_S:
                self.save()
                return True
            return False
        text = event.text().upper()
        if text and text in self.label_set.keys:
            self.activity_key(self.label_set.keys[text])
            return True
        if key == K.Key_Space:
            self.toggle_play()
        elif key in (K.Key_Left, K.Key_Right):
            sign = 1 if key == K.Key_Right else -1
            if shift:
                self.set_cursor(self.cursor + sign)
            else:
                self.step_frame(sign)
        elif key == K.Key_Escape:
            self.pending = None
            self.refresh_tracks()
        elif key in (K.Key_Delete, K.Key_Backspace):
            self.erase_at_cursor()
        elif key == K.Key_S:
            self.split_at_cursor()
        elif key == K.Key_M:
            self.merge_at_cursor()
        elif key == K.Key_A:
            self.anchor_here()
        elif key == K.Key_BracketLeft:
            i = SPEEDS.index(self.speed) if self.speed in SPEEDS else 2
            self.set_speed(SPEEDS[max(i - 1, 0)])
        elif key == K.Key_BracketRight:
            i = SPEEDS.index(self.speed) if self.speed in SPEEDS else 2
            self.set_speed(SPEEDS[min(i + 1, len(SPEEDS) - 1)])
        else:
            return False
        return True
