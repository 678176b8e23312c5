"""The WalkerLab wire protocol, shared by firmware and host (see docs/protocol.md)."""
from .wire import *  # noqa: F401,F403
from .wire import Frame, FrameDecoder, crc16, encode_frame, PROTOCOL_VERSION  # noqa: F401
