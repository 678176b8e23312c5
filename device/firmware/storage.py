# Small-file storage for the firmware: the board's flash filesystem, or memory.
#
# The firmware keeps two files (the calibration, the uploaded model); writes go to a temporary name and
# are renamed into place, so a power cut mid-write leaves the old model intact.
import os


class FileStorage:
    """Files under `root` ("" = the current directory, the board's flash root)."""

    def __init__(self, root=""):
        self.root = root

    def _path(self, name):
        return self.root + "/" + name if self.root else name

    def read(self, name):
        """The file's bytes, or None if it does not exist."""
        try:
            with open(self._path(name), "rb") as f:
                return f.read()
        except OSError:
            return None

    def write(self, name, data):
        tmp = self._path(name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            os.remove(self._path(name))  # MicroPython's rename does not replace on all ports
        except OSError:
            pass
        os.rename(tmp, self._path(name))

    def remove(self, name):
        try:
            os.remove(self._path(name))
        except OSError:
            pass


class MemoryStorage:
    """A dict standing in for flash (the virtual walker's default)."""

    def __init__(self):
        self.files = {}

    def read(self, name):
        return self.files.get(name)

    def write(self, name, data):
        self.files[name] = bytes(data)

    def remove(self, name):
        self.files.pop(name, None)
