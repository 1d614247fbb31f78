"""Apache Avro's Python library (Debian's python3-avro) on the other side
of weir's Avro tests.

  pyavro.py write SCHEMA.avsc         write the fixed records below, one hex
                                      line each
  pyavro.py read WRITER.avsc READER.avsc
                                      read hex lines from stdin with schema
                                      resolution, print one JSON line each
  pyavro.py ocf-write SCHEMA.avsc OUT write the fixed records to an object
                                      container file (deflate)
  pyavro.py ocf-read IN               print an object container file's
                                      records as JSON lines
"""
import datetime
import decimal
import io
import json
import sys

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
        with open(sys.argv[3], "wb") as f:
            with avro.datafile.DataFileWriter(f, avro.io.DatumWriter(), schema, codec="deflate") as w:
                for r in records():
                    w.append(r)
    elif cmd == "ocf-read":
        with open(sys.argv[2], "rb") as f:
            with avro.datafile.DataFileReader(f, avro.io.DatumReader()) as rd:
                for d in rd:
                    print(json.dumps(plain(d), sort_keys=True))
    else:
        sys.exit("unknown command " + cmd)


main()
