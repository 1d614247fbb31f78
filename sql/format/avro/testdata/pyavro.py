"""Apache Avro's Python library (Debian's python3-avro) on the other side
of weir's Avro tests.

  pyavro.py write SCHEMA.avsc         write the fixed records below, one hex
                                      line each
  pyavro.py read WRITER.avsc READER.avsc
                                      read hex lines from stdin with schema
                                      resolution, print one JSON line each
  pyavro.py ocf-write SCHEMA.avsc OUT [CODEC [N]]
                                      write the fixed records, then N
                                      generated ones (gen below), to an
                                      object container file (codec deflate
                                      unless given)
  pyavro.py ocf-read IN...            print object container files'
                                      records as JSON lines
  pyavro.py codecs                    print the codecs this avro library has
                                      (snappy and zstandard need modules
                                      of their own)
"""
import datetime
import decimal
import io
import json
import sys

import avro.codecs
import avro.datafile
import avro.io
import avro.schema

UTC = datetime.timezone.utc


def records():
    # The records Go expects (sql/format/avro/pyavro_test.go).
    return [
        {"id": 1, "name": "ann", "price": 1.5, "qty": 3, "active": True,
         "tags": ["a", "b"], "attrs": {"x": 1}, "addr": {"city": "Oslo", "zip": None},
         "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
         "day": datetime.date(2024, 2, 29), "amount": decimal.Decimal("-123.45"),
         "note": "new", "raw": b"\x00\xff"},
        {"id": 2, "name": None, "price": -0.25, "qty": -7, "active": False,
         "tags": [], "attrs": {}, "addr": None,
         "ts": datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
         "day": datetime.date(1970, 1, 1), "amount": decimal.Decimal("0.01"),
         "note": "", "raw": b""},
    ]


def gen(i):
    # Generated records (sql/connector/filesystem/avro_test.go computes
    # the same): enough of them for several blocks.
    return {"id": 1000 + i, "name": None if i % 7 == 0 else "n%d" % i,
            "price": i * 0.5, "qty": i - 2500, "active": i % 2 == 0,
            "tags": ["t%d" % i] * (i % 3), "attrs": {"k": i},
            "addr": None if i % 2 else {"city": "c%d" % i, "zip": None},
            "ts": datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=i),
            "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 365),
            "amount": decimal.Decimal(i).scaleb(-2), "note": "x" * (i % 5),
            "raw": bytes([i % 256])}


def parse(path):
    with open(path) as f:
        return avro.schema.parse(f.read())


def plain(v):
    """A datum as JSON can say it."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in sorted(v.items())}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, bytes):
        return "hex:" + v.hex()
    if isinstance(v, decimal.Decimal):
        return "dec:" + str(v)
    if isinstance(v, datetime.datetime):
        return "ts:" + v.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, datetime.date):
        return "date:" + v.isoformat()
    if isinstance(v, datetime.time):
        return "time:" + v.isoformat()
    if isinstance(v, float):
        return "f:" + repr(v)
    return v


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        schema = parse(sys.argv[2])
        w = avro.io.DatumWriter(schema)
        for r in records():
            buf = io.BytesIO()
            w.write(r, avro.io.BinaryEncoder(buf))
            print(buf.getvalue().hex())
    elif cmd == "read":
        r = avro.io.DatumReader(parse(sys.argv[2]), parse(sys.argv[3]))
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            d = r.read(avro.io.BinaryDecoder(io.BytesIO(bytes.fromhex(line))))
            print(json.dumps(plain(d), sort_keys=True))
    elif cmd == "ocf-write":
        schema = parse(sys.argv[2])
        codec = sys.argv[4] if len(sys.argv) > 4 else "deflate"
        n = int(sys.argv[5]) if len(sys.argv) > 5 else 0
        with open(sys.argv[3], "wb") as f:
            with avro.datafile.DataFileWriter(f, avro.io.DatumWriter(), schema, codec=codec) as w:
                for r in records():
                    w.append(r)
                for i in range(n):
                    w.append(gen(i))
    elif cmd == "ocf-read":
        for path in sys.argv[2:]:
            with open(path, "rb") as f:
                with avro.datafile.DataFileReader(f, avro.io.DatumReader()) as rd:
                    for d in rd:
                        print(json.dumps(plain(d), sort_keys=True))
    elif cmd == "codecs":
        print(" ".join(sorted(avro.codecs.KNOWN_CODECS)))
    else:
        sys.exit("unknown command " + cmd)


main()
