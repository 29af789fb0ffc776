"""A client written from seaway.proto alone, as one in another language would be: it imports only
grpc and the stubs generated from the .proto into the directory given, never seaway. It prints
what it saw as one JSON object."""

import json
import sys
import threading

import grpc

sys.path.insert(0, sys.argv[1])
import seaway_v1_pb2 as pb
import seaway_v1_pb2_grpc as rpc

address, token = sys.argv[2], sys.argv[3]
auth = (("authorization", f"Bearer {token}"),)
seen: dict[str, object] = {}


def failure(call: grpc.Call) -> dict[str, str]:
    trailing = dict(call.trailing_metadata() or ())
    return {"status": call.code().name, "code": trailing.get("seaway-code", ""),
            "retriable": trailing.get("seaway-retriable", "")}


with grpc.insecure_channel(address) as channel:
    stub = rpc.SeawayStub(channel)
    log = stub.CreateLog(pb.CreateLogRequest(name="foreign"), metadata=auth)
    first = stub.Append(pb.AppendRequest(log_id=log.log_id, payloads=[b"a", b"b"], producer_id=b"p1", sequence=0),
                        metadata=auth)
    again = stub.Append(pb.AppendRequest(log_id=log.log_id, payloads=[b"a", b"b"], producer_id=b"p1", sequence=0),
                        metadata=auth)
    seen["appended"] = [first.first_lsn, first.count, again.first_lsn]
    tail = stub.GetLogState(pb.LogRef(log_id=log.log_id), metadata=auth).tail_lsn
    items: list[list[object]] = []
    start = pb.ReadControl(start=pb.ReadStart(log_id=log.log_id, lsn_from=0, lsn_until=tail, tag=7))
    grant = pb.ReadControl(grant=pb.ReadGrant(items=1000, bytes=1 << 20))
    done = threading.Event()

    def controls():  # the stream stays open (not half-closed) until the read has ended
        yield pb.ReadControls(controls=[start, grant])
        done.wait(60)

    stream = stub.ReadMany(controls(), metadata=auth)
    for reply in stream:
        ended = False
        for part in reply.logs:
            for run in part.runs:
                if run.HasField("records"):
                    items += [[run.records.first_lsn + i, p.decode()] for i, p in enumerate(run.records.payloads)]
                else:
                    items.append([pb.GapType.Name(run.gap.type), run.gap.lsn_lo, run.gap.lsn_hi])
            ended = ended or (part.tag == 7 and part.ended)
        if ended:
            done.set()
            stream.cancel()
            break
    seen["read"] = items
    try:
        stub.GetLog(pb.LogRef(name="no-such-log"), metadata=auth)
    except grpc.RpcError as exc:
        seen["unknown"] = failure(exc)
    try:
        stub.ListLogs(pb.PageRequest(), metadata=(("authorization", "Bearer wrong"),))
    except grpc.RpcError as exc:
        seen["wrong_token"] = failure(exc)
    raw_append = channel.unary_unary("/seaway.v1.Seaway/Append")
    try:
        raw_append(b"\xff\xff\xff\xff", metadata=auth)
    except grpc.RpcError as exc:
        seen["undecodable"] = failure(exc)
    sealed = stub.SealLog(pb.LogRef(log_id=log.log_id), metadata=auth)
    try:
        stub.Append(pb.AppendRequest(log_id=log.log_id, payloads=[b"c"]), metadata=auth)
    except grpc.RpcError as exc:
        seen["after_seal"] = failure(exc)
    seen["final_lsn"] = sealed.lsn
print(json.dumps(seen))
