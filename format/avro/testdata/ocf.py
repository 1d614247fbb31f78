"""Apache Avro's Python library (Debian's python3-avro) on the other side
of format/avro's object container file tests.

  ocf.py write SCHEMA.avsc OUT   write the records below (deflate blocks)
  ocf.py read IN                 print a file's records as JSON lines
"""
import datetime
import json
import sys

import avro.datafile
import avro.io
import avro.schema

UTC = datetime.timezone.utc

RECORDS = [
    {"id": 1, "name": "ann", "price": 1.5, "tags": ["a", "b"], "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), "extra": 7},
    {"id": 2, "name": None, "price": -0.25, "tags": [], "ts": datetime.datetime(1970, 1, 1, tzinfo=UTC), "extra": 8},
]


def plain(v):
    if isinstance(v, dict):
        return {k: plain(x) for k, x in sorted(v.items())}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, datetime.datetime):
        return "ts:" + v.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return v


if sys.argv[1] == "write":
    with open(sys.argv[2]) as f:
        schema = avro.schema.parse(f.read())
    with open(sys.argv[3], "wb") as out:
        with avro.datafile.DataFileWriter(out, avro.io.DatumWriter(), schema, codec="deflate") as w:
            for r in RECORDS:
                w.append(r)
elif sys.argv[1] == "read":
    with open(sys.argv[2], "rb") as f:
        with avro.datafile.DataFileReader(f, avro.io.DatumReader()) as rd:
            print(rd.schema)
            for d in rd:
                print(json.dumps(plain(d), sort_keys=True))
else:
    sys.exit("unknown command")
