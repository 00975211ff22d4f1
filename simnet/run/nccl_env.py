"""The NCCL environment variables simnet honours (``NCCL_ALGO``, ``NCCL_PROTO``,
``NCCL_NVLS_ENABLE``, ``NCCL_COLLNET_ENABLE``, ``NCCL_MIN_NCHANNELS``, ``NCCL_MAX_NCHANNELS``,
``NCCL_MIN_P2P_NCHANNELS``, ``NCCL_MAX_P2P_NCHANNELS``, ``NCCL_NCHANNELS_PER_NET_PEER``)
and RCCL's (``RCCL_LL128_FORCE_ENABLE``, ``RCCL_MSCCL_ENABLE``, ``RCCL_MSCCL_FORCE_ENABLE``,
``RCCL_MSCCL_ENABLE_SINGLE_PROCESS``; the others that change RCCL's algorithm, protocol or
channels are read to be refused under ``model: rccl``), read as NCCL reads them, and the
system NCCL's (RCCL's) tuner sees under them."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import replace

from simnet.topology.graph import Topology
from simnet.tuning import predict, rccl, search, tables
from simnet.tuning.nccl_names import NCCL_READS, RCCL_ONLY_READS

_INTEGERS = ("NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
             *tables.P2P_CHANNEL_VARIABLES, "RCCL_LL128_FORCE_ENABLE", *rccl.MSCCL_VARIABLES)
NCCL_VARIABLES = ("NCCL_ALGO", "NCCL_PROTO", *_INTEGERS, *rccl.UNMODELLED, *tables.UNMODELLED)
"""The environment variables that change what simnet simulates, as they change what NCCL
(RCCL) runs; RCCL's ``rccl.UNMODELLED`` and NCCL's ``tables.UNMODELLED`` are read only to
refuse a run they would change."""

JUDGED_CHOICES = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_MIN_NCHANNELS",
                  "NCCL_MAX_NCHANNELS", "RCCL_LL128_FORCE_ENABLE")
"""The variables a run says it changed nothing of where it is so (``simulate.steering_variables``):
NCCL_ALGO, which steers ``auto`` only (NCCL's pick and its candidates; a named algorithm runs
as named), and those that steer a named algorithm's run through the model's plan (its
protocol, its channels, the system NCCL sees), said where the plan is the same without them."""

_P2P_FIELDS = ("min_p2p_channels", "max_p2p_channels", "net_peer_channels")  # search.System's, as P2P_CHANNEL_VARIABLES

__all__ = ["NCCL_VARIABLES", "JUDGED_CHOICES", "nccl_env", "nccl_integer", "nccl_default", "turned_off",
           "nccl_system", "misspelt", "read_elsewhere", "set_empty", "DESCRIBED_BY_THE_TOPOLOGY"]


def nccl_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The NCCL variables simnet honours (``NCCL_VARIABLES``) from ``environ`` (default:
    the process environment); ``ValueError`` for a name or value NCCL would not take."""
    environ = os.environ if environ is None else environ
    env = {k: environ[k].strip() for k in NCCL_VARIABLES if environ.get(k, "").strip()
           and not (k in tables.UNMODELLED and nccl_default(environ[k].strip(), tables.UNMODELLED[k], k))}
    predict.parse_nccl_list(env.get("NCCL_ALGO"), tables.ALGORITHMS, "NCCL_ALGO")
    predict.parse_nccl_list(env.get("NCCL_PROTO"), tables.PROTOCOLS, "NCCL_PROTO")
    for name in _INTEGERS:
        if name in env:
            value = nccl_integer(env[name], name)
            if name.endswith("_NCHANNELS") and value < 1:
                raise ValueError(f"{name}={env[name]!r}: a channel count is 1 or more")
            if name == "NCCL_NCHANNELS_PER_NET_PEER" and value < 1:  # src/init.cc:2040-2042, v2.30.7
                raise ValueError(f"{name}={env[name]!r}: NCCL ignores a value below 1 ('too low', keeping its "
                                 "own count); give 1 or more, or unset it")
    return env


def misspelt(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per ``NCCL_`` or ``RCCL_`` variable of ``environ`` (default: the process
    environment) that neither NCCL 2.30.7 nor RCCL 2.21.5 reads (``nccl_names``), naming the
    one simnet follows or refuses that it is spelt nearly as (``NCCL_PROTOCOL`` for
    ``NCCL_PROTO``), if any, and one per name of theirs in other letters' case (``nccl_algo``):
    the library ignores it, and so does simnet, so the run is the one without it, which
    whoever set it rarely means. (The command line says it; ``simulate(env=...)`` reads only
    the names it follows.)

    >>> [line.split(" (")[0] for line in misspelt({"NCCL_PROTOCOL": "Simple", "NCCL_FOO": "1", "NCCL_DEBUG": "INFO"})]
    ['NCCL_FOO=1 is not a variable NCCL or RCCL reads', 'NCCL_PROTOCOL=Simple is not a variable NCCL or RCCL reads']
    >>> misspelt({"nccl_algo": "Ring"})[0].split(":")[0]
    'nccl_algo=Ring is not NCCL_ALGO'
    """
    environ = os.environ if environ is None else environ
    said = []
    for name in sorted(environ):
        upper = name.upper()
        if name != upper and (upper in NCCL_READS or upper in RCCL_ONLY_READS or upper in NCCL_VARIABLES):
            said.append(f"{name}={environ[name]} is not {upper}: NCCL and RCCL read their variables by their "
                        "names in capitals (getenv is case-sensitive); they ignore it, and so did this run")
            continue
        if not name.startswith(("NCCL_", "RCCL_")):
            continue
        nccl_name = name.startswith("NCCL_")
        rccl_only = nccl_name and name in RCCL_ONLY_READS
        if name in (NCCL_READS if nccl_name else RCCL_ONLY_READS) or (name in NCCL_VARIABLES and not rccl_only):
            continue
        near = _resembled(name[5:], name)
        if near and rccl_only:  # NCCL ignores it; a run under RCCL refuses it (rccl.UNMODELLED), saying so itself
            said.append(f"{name}={environ[name]} is read by RCCL 2.21.5 only (simnet refuses it where RCCL runs), "
                        f"not by NCCL 2.30.7; did you mean {near}? NCCL ignores it, and so did this run")
        elif not rccl_only:  # (one RCCL reads is said by read_by_nccl_only)
            library = "NCCL or RCCL" if nccl_name else "RCCL"
            said.append(f"{name}={environ[name]} is not a variable {library} reads (NCCL 2.30.7, RCCL 2.21.5)"
                        f"{f'; did you mean {near}?' if near else ':'} {library} ignores it, and so did this run")
    return said


DESCRIBED_BY_THE_TOPOLOGY = ("NCCL_TOPO_FILE",)
"""Variables naming a file NCCL (RCCL) reads the machine from (graph/topo.cc:1774-1777,
v2.30.7), where simnet reads it from its topology: run as they are, said by ``read_elsewhere``."""


def read_by_nccl_only(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line naming the variables of ``environ`` (default: the process environment) that
    NCCL 2.30.7 or RCCL 2.21.5 reads (``nccl_names``) and simnet neither follows, refuses
    (``NCCL_VARIABLES``) nor says of otherwise (``DESCRIBED_BY_THE_TOPOLOGY``), as
    ``NCCL_IB_TIMEOUT`` or ``NCCL_DEBUG``: the answer is the one without them; or none.

    >>> read_by_nccl_only({"NCCL_IB_TIMEOUT": "22", "NCCL_ALGO": "Ring"})[0].split(":")[0]
    'NCCL_IB_TIMEOUT=22 is read by NCCL and not modelled by simnet'
    """
    environ = os.environ if environ is None else environ
    names = [name for name in sorted(environ) if environ[name].strip() and name not in NCCL_VARIABLES
             and name not in DESCRIBED_BY_THE_TOPOLOGY and (name in NCCL_READS or name in RCCL_ONLY_READS)]
    if not names:
        return []
    shown = ", ".join(f"{name}={environ[name]}" for name in names)
    rccl_only = [name in RCCL_ONLY_READS or name.startswith("RCCL_") for name in names]
    library = "RCCL (AMD GPUs)" if all(rccl_only) else "NCCL" if not any(rccl_only) else "NCCL or RCCL"
    return [f"{shown} {'is' if len(names) == 1 else 'are'} read by {library} and not modelled by simnet: "
            "simnet's answers are the ones without "
            f"{'it' if len(names) == 1 else 'them'} (on the machine, a variable that tunes "
            f"{'RCCL' if library.startswith('RCCL') else 'NCCL'}'s transports may "
            "change the time)"]


def set_empty(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line naming the variables NCCL 2.30.7 or RCCL 2.21.5 reads (or simnet follows) that
    ``environ`` (default: the process environment) sets to nothing but blanks: the library
    reads such a value as unset, and so does simnet; or none.

    >>> set_empty({"NCCL_ALGO": " ", "NCCL_PROTO": "Simple"})[0].split(":")[0]
    "NCCL_ALGO='' is set to nothing"
    """
    environ = os.environ if environ is None else environ
    names = [name for name in sorted(environ) if not environ[name].strip()
             and (name in NCCL_READS or name in RCCL_ONLY_READS or name in NCCL_VARIABLES)]
    if not names:
        return []
    return [f"{', '.join(f'{name}={chr(39) * 2}' for name in names)} {'is' if len(names) == 1 else 'are'} set to "
            "nothing: NCCL (and RCCL) read an empty value as unset, and so did this run"]


def read_elsewhere(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per ``DESCRIBED_BY_THE_TOPOLOGY`` variable set in ``environ`` (default: the
    process environment): simnet never opens the file it names.

    >>> read_elsewhere({"NCCL_TOPO_FILE": "/opt/topo.xml"})[0].split(";")[0]
    'NCCL_TOPO_FILE=/opt/topo.xml names the XML NCCL reads the machine from'
    """
    environ = os.environ if environ is None else environ
    return [f"{name}={environ[name]} names the XML NCCL reads the machine from; simnet reads the machine from "
            "its topology file and did not open this one (write there what the XML describes)"
            for name in DESCRIBED_BY_THE_TOPOLOGY if environ.get(name, "").strip()]


def _resembled(rest: str, name: str) -> str | None:
    """The variable simnet follows or refuses (other than ``name``) whose name after its prefix
    is most like ``rest`` (difflib's ratio): among those that begin ``rest`` or the other way
    round (PROTOCOL, PROTO) and those at least 0.75 alike (MAX_CHANNELS, MAX_NCHANNELS)."""
    ours = {n[5:]: n for n in NCCL_VARIABLES if n != name}
    candidates = {o for o in ours if min(len(o), len(rest)) >= 4 and (rest.startswith(o) or o.startswith(rest))}
    candidates |= set(difflib.get_close_matches(rest, list(ours), n=3, cutoff=0.75))
    if not candidates:
        return None
    return ours[max(sorted(candidates), key=lambda o: difflib.SequenceMatcher(None, rest, o).ratio())]


def nccl_default(value: str, default: str | None, name: str) -> bool:
    """Whether ``value`` of NCCL variable ``name`` is NCCL's ``default`` (None: NCCL picks per
    system, so only unset is), read as NCCL reads an integer (``0x400000`` is 4194304)."""
    if not value or value == default:
        return True
    try:
        return default is not None and nccl_integer(value, name) == int(default)
    except ValueError:
        return False


_C_INTEGER = re.compile(r"\s*[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def nccl_integer(text: str, name: str) -> int:
    """An integer NCCL variable as NCCL reads it (``strtoll(text, 0, 0)`` in ncclLoadParam,
    NCCL src/misc/param.cc: decimal, 0x hex, leading-0 octal, a sign). Text ``strtoll``
    would read only in part (``false`` is 0 to NCCL, ``1abc`` is 1) is refused: it is almost
    always a typo.

    >>> nccl_integer(" 0x10", "NCCL_X"), nccl_integer("010", "NCCL_X"), nccl_integer("-1", "NCCL_X")
    (16, 8, -1)
    """
    if not _C_INTEGER.fullmatch(text):
        raise ValueError(f"{name}={text!r}: not an integer (NCCL would read only its leading digits, 0 if none); "
                         f"write {'0 or 1' if name.endswith('_ENABLE') else 'a whole number, e.g. 8'}")
    octal = re.fullmatch(r"\s*[+-]?0[0-7]+", text)  # C's leading 0; Python's int(, 0) refuses it
    return int(text.strip(), 8 if octal else 0)


def turned_off(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip()  # empty is unset, as for NCCL
    return bool(value) and nccl_integer(value, name) == 0


def nccl_system(topology: Topology, env: Mapping[str, str]) -> search.System:
    """The system NCCL's tuner sees on ``topology``: ``NCCL_NVLS_ENABLE=0`` turns NVLink
    SHARP off (NCCL's nvlsSupport), so neither NVLS nor NVLSTree can be picked;
    ``NCCL_COLLNET_ENABLE=0`` turns network SHARP off (no CollNet, no NVLS across hosts);
    ``NCCL_MIN_NCHANNELS``/``NCCL_MAX_NCHANNELS`` bound the channels opened,
    ``NCCL_MIN_P2P_NCHANNELS``/``NCCL_MAX_P2P_NCHANNELS``/``NCCL_NCHANNELS_PER_NET_PEER``
    the channels of its send/recv (``enqueue.p2p_channels``), and
    ``RCCL_LL128_FORCE_ENABLE=1`` turns RCCL's LL128 on where its default keeps it off;
    ``RCCL_MSCCL_ENABLE=0`` turns MSCCL off, ``RCCL_MSCCL_FORCE_ENABLE=1`` on beyond the
    topologies RCCL enables it for (``rccl.msccl``); an ``RCCL_`` variable on GPUs that run
    NCCL is refused (ValueError): NCCL does not read it.
    Unset, SHARP switches (``sharp: true``) are taken to be in use, as with
    NCCL_COLLNET_ENABLE=1 and NCCL's SHARP plugin (NCCL's own default is 0)."""
    system = search.system_of(topology)
    foreign = next((name for name in env if name.startswith("RCCL_") and env[name].strip()), None)
    if foreign and system.library == "nccl":  # NCCL reads no RCCL_ variable: it would change nothing
        raise ValueError(f"{foreign}={env[foreign]} is RCCL's (AMD Instinct GPUs), and these GPUs run NCCL, which "
                         "does not read it: unset it (or describe AMD GPUs: gpu: mi300x)")
    if system.nvls and turned_off(env, "NCCL_NVLS_ENABLE"):
        system = replace(system, nvls=False,
                         turned_off=(*system.turned_off, f"NCCL_NVLS_ENABLE={env['NCCL_NVLS_ENABLE']}"))
    if system.collnet and turned_off(env, "NCCL_COLLNET_ENABLE"):
        system = replace(system, collnet=False,
                         turned_off=(*system.turned_off, f"NCCL_COLLNET_ENABLE={env['NCCL_COLLNET_ENABLE']}"))
    bounds = {key: nccl_integer(env[name], name) for key, name in (("min_channels", "NCCL_MIN_NCHANNELS"),
                                                                    ("max_channels", "NCCL_MAX_NCHANNELS"),
                                                                    *zip(_P2P_FIELDS, tables.P2P_CHANNEL_VARIABLES))
              if env.get(name, "").strip()}
    if bounds:
        system = replace(system, **bounds)
    if system.library == "rccl" and env.get("RCCL_LL128_FORCE_ENABLE", "").strip():
        system = replace(system, ll128_forced=nccl_integer(env["RCCL_LL128_FORCE_ENABLE"], "") != 0)
    if system.library == "rccl":  # ncclLoadParam: any non-zero value is on (msccl_lifecycle.cc:29-48)
        if env.get("RCCL_MSCCL_ENABLE", "").strip():
            system = replace(system, msccl=nccl_integer(env["RCCL_MSCCL_ENABLE"], "RCCL_MSCCL_ENABLE") != 0)
        if env.get("RCCL_MSCCL_FORCE_ENABLE", "").strip():
            system = replace(system, msccl_forced=nccl_integer(env["RCCL_MSCCL_FORCE_ENABLE"],
                                                               "RCCL_MSCCL_FORCE_ENABLE") != 0)
    return system
