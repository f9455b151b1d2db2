"""records: the bottom of bayesgeom -- atomic files, JSON and tables, run manifests, typed
results, declared options, the fingerprint + finished-part protocol, checksums, one-line
errors with their exit statuses, and run directories held by one writer. It imports no other
bayesgeom package; all of them may import it.

Every public name is imported on first use (:mod:`records.lazy`): importing a light part
(``records.lazy``, ``records.options``) does not import numpy or pandas."""

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .atomic import atomic_write, atomic_write_bytes, atomic_write_text, make_dir, os_errors
    from .checksums import (
        SAFE_INDEX,
        check_safetensors,
        file_sha256,
        has_checksums,
        safetensors_shards,
        verify_checksums,
        write_checksums,
    )
    from .errors import (
        BayesgeomError,
        FaultError,
        FileFault,
        InputFileError,
        UsageError,
        exit_code,
        os_error_line,
    )
    from .files import (
        json_safe,
        read_json,
        read_table,
        read_text,
        write_json,
        write_table,
        write_text,
    )
    from .manifest import package_version, physical_device, run_manifest, visible_devices
    from .options import (
        SEED_MAX,
        SEED_MIN,
        Option,
        OptionError,
        check_options,
        declared,
        expect_config,
        option,
        run_settings,
        same_option,
        seed_option,
    )
    from .reuse import Parts, fingerprint
    from .run_dir import RunBusyError, RunDir, RunDirError, check_out, finished_with, hold
    from .shards import concat_rows, part_fingerprint, part_name, shard_bounds
    from .typed import from_json, read_result, to_json, write_result

__all__ = [
    "SAFE_INDEX",
    "SEED_MAX",
    "SEED_MIN",
    "BayesgeomError",
    "FaultError",
    "FileFault",
    "InputFileError",
    "Option",
    "OptionError",
    "Parts",
    "RunBusyError",
    "RunDir",
    "RunDirError",
    "UsageError",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_options",
    "check_out",
    "check_safetensors",
    "concat_rows",
    "declared",
    "exit_code",
    "expect_config",
    "file_sha256",
    "fingerprint",
    "finished_with",
    "from_json",
    "has_checksums",
    "hold",
    "json_safe",
    "make_dir",
    "option",
    "os_error_line",
    "os_errors",
    "package_version",
    "part_fingerprint",
    "part_name",
    "physical_device",
    "read_json",
    "read_result",
    "read_table",
    "read_text",
    "run_manifest",
    "run_settings",
    "safetensors_shards",
    "same_option",
    "seed_option",
    "shard_bounds",
    "to_json",
    "verify_checksums",
    "visible_devices",
    "write_checksums",
    "write_json",
    "write_result",
    "write_table",
    "write_text",
]

__getattr__ = lazy_exports(__name__)
