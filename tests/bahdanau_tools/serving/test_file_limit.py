"""bahdanau-serve holds as many connections as its file limit (`ulimit -n`) leaves room for: it
raises its soft limit as far as --max-connections needs, up to the hard limit, and refuses to start,
in one line, under a limit that leaves room for none."""

import json
import subprocess

from ...support.tools import fairseq_env, fairseq_tool, python_program
from .conftest import limit_files

ROOM = """
import json, resource, sys
from bahdanau_tools.serving.file_limit import FILES_PER_CONNECTION, connection_room
soft, hard = (int(limit) for limit in sys.argv[1:3])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
room = connection_room(int(sys.argv[3]))
print(json.dumps([*room, resource.getrlimit(resource.RLIMIT_NOFILE)[0], FILES_PER_CONNECTION]))
"""


def _room(soft, hard, max_connections):
    """(connections, file limit, files needed, the soft limit after, files per connection)."""
    return json.loads(python_program(ROOM, soft, hard, max_connections).stdout)


def test_the_soft_limit_is_raised_as_far_as_the_connections_need():
    connections, file_limit, needed, soft, _ = _room(64, 4096, 1000)
    assert connections == 1000
    assert file_limit == needed == soft < 4096


def test_a_hard_limit_below_what_the_connections_need_leaves_room_for_fewer():
    connections, file_limit, needed, soft, per_connection = _room(64, 512, 1000)
    assert file_limit == soft == 512 < needed
    outside_the_connections = needed - 1000 * per_connection
    assert connections == (512 - outside_the_connections) // per_connection


def test_a_file_limit_with_no_room_for_a_connection_is_one_line(serving_checkpoint, data_bin):
    completed = subprocess.run(
        [fairseq_tool("bahdanau-serve"), serving_checkpoint, "--data", data_bin, "--cpu"],
        capture_output=True,
        text=True,
        env=fairseq_env(),
        preexec_fn=limit_files(24),
        timeout=300,
    )
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr
    last = completed.stderr.strip().splitlines()[-1]
    assert last.startswith("error: the file limit (ulimit -n 24) leaves no room for a connection")
    assert "raise the limit (ulimit -n " in last and "or lower --max-connections" in last
