"""The cluster's messages on the wire (``cluster.proto``), to and from the roles' dataclasses."""

from __future__ import annotations

from seaway.errors import InvalidArgumentError
from seaway.log.replication import (
    Clean,
    Cleaned,
    Copy,
    Kind,
    ReadReply,
    Release,
    Seal,
    Sealed,
    Store,
    Stored,
    Trim,
)
from seaway.wire import cluster_pb2 as pb

U32 = 2**32 - 1
U64 = 2**64 - 1


def copy_to_msg(copy: Copy, msg: pb.Copy) -> None:
    msg.lsn = copy.lsn
    msg.kind = int(copy.kind)
    msg.payload = copy.payload
    msg.wave = copy.wave
    msg.recovery_epoch = copy.recovery_epoch
    msg.timestamp_ms = copy.timestamp_ms


def copy_from_msg(msg: pb.Copy) -> Copy:
    try:
        kind = Kind(msg.kind)
    except ValueError:
        raise InvalidArgumentError(f"a copy of kind {msg.kind}") from None
    return Copy(msg.lsn, kind, msg.payload, msg.wave, msg.recovery_epoch, msg.timestamp_ms)


def to_msg(message: object) -> pb.Message:
    """One role's message as a ``Message``."""
    out = pb.Message()
    if isinstance(message, Store):
        out.store.log_id, out.store.lng = message.log_id, message.lng
        copy_to_msg(message.copy, out.store.copy)
    elif isinstance(message, Stored):
        s = out.stored
        s.log_id, s.lsn, s.wave, s.recovery_epoch, s.node, s.preempted_by = (
            message.log_id, message.lsn, message.wave, message.recovery_epoch, message.node, message.preempted_by)
    elif isinstance(message, Seal):
        out.seal.log_id, out.seal.by, out.seal.lce = message.log_id, message.by, message.lce
    elif isinstance(message, Sealed):
        s2 = out.sealed
        s2.log_id, s2.by, s2.node, s2.preempted_by = message.log_id, message.by, message.node, message.preempted_by
        for epoch, lng in message.lngs:
            s2.lngs.add(epoch=epoch, lng=lng)
        for copy in message.digest:
            copy_to_msg(copy, s2.digest.add())
    elif isinstance(message, Clean):
        out.clean.log_id, out.clean.by, out.clean.lce = message.log_id, message.by, message.lce
    elif isinstance(message, Cleaned):
        out.cleaned.log_id, out.cleaned.by, out.cleaned.node = message.log_id, message.by, message.node
    elif isinstance(message, Release):
        out.release.log_id, out.release.lsn = message.log_id, message.lsn
    elif isinstance(message, Trim):
        out.trim.log_id, out.trim.lsn = message.log_id, message.lsn
    else:
        raise InvalidArgumentError(f"not a cluster message: {type(message).__name__}")
    return out


def from_msg(msg: pb.Message) -> object:
    """A ``Message`` as the role's message; a message with no body is an InvalidArgumentError."""
    which = msg.WhichOneof("body")
    if which == "store":
        return Store(msg.store.log_id, copy_from_msg(msg.store.copy), msg.store.lng)
    if which == "stored":
        s = msg.stored
        return Stored(s.log_id, s.lsn, s.wave, s.recovery_epoch, s.node, s.preempted_by)
    if which == "seal":
        return Seal(msg.seal.log_id, msg.seal.by, msg.seal.lce)
    if which == "sealed":
        s2 = msg.sealed
        return Sealed(s2.log_id, s2.by, s2.node, tuple((x.epoch, x.lng) for x in s2.lngs),
                      tuple(copy_from_msg(c) for c in s2.digest), s2.preempted_by)
    if which == "clean":
        return Clean(msg.clean.log_id, msg.clean.by, msg.clean.lce)
    if which == "cleaned":
        return Cleaned(msg.cleaned.log_id, msg.cleaned.by, msg.cleaned.node)
    if which == "release":
        return Release(msg.release.log_id, msg.release.lsn)
    if which == "trim":
        return Trim(msg.trim.log_id, msg.trim.lsn)
    raise InvalidArgumentError("a cluster message without a body")


def read_reply_to_msg(reply: ReadReply) -> pb.ReadReply:
    out = pb.ReadReply(log_id=reply.log_id, node=reply.node, next_lsn=reply.next_lsn, trim_point=reply.trim_point)
    for copy in reply.copies:
        copy_to_msg(copy, out.copies.add())
    return out


def read_reply_from_msg(msg: pb.ReadReply) -> ReadReply:
    return ReadReply(msg.log_id, msg.node, tuple(copy_from_msg(c) for c in msg.copies), msg.next_lsn, msg.trim_point)
