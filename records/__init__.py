"""records: the bottom of bayesgeom -- atomic files, JSON and tables, run manifests, typed
results, declared options and the fingerprint + finished-part protocol. It imports no other
bayesgeom package; all of them may import it."""

from records.atomic import atomic_write, atomic_write_bytes, atomic_write_text
from records.files import json_safe, read_json, write_json, write_table, write_text
from records.manifest import package_version, run_manifest
from records.options import Option, OptionError, check_options, declared, option, same_option
from records.reuse import Parts, file_sha256, fingerprint
from records.typed import from_json, read_result, to_json, write_result

__all__ = [
    "Option",
    "OptionError",
    "Parts",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_options",
    "declared",
    "file_sha256",
    "fingerprint",
    "from_json",
    "json_safe",
    "option",
    "package_version",
    "read_json",
    "read_result",
    "run_manifest",
    "same_option",
    "to_json",
    "write_json",
    "write_result",
    "write_table",
    "write_text",
]
