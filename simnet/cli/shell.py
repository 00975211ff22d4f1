"""What every subcommand shares: one-line errors with exit code 2, internal errors as 70, consoles."""

from __future__ import annotations

import errno
import functools
import gc
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from simnet.errors import InputError

DEBUG = {"traceback": False}
EXIT_BAD_INPUT = 2
EXIT_BUG = 70  # EX_SOFTWARE: an internal error, not the user's fault
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader closed the pipe
EXIT_CANNOT_WRITE = 74  # EX_IOERR: the disk or device refused the output
_WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)


def friendly(command):
    """Turn ``InputError`` into one line on stderr and exit code 2, Ctrl-C into 130, a full or
    failing disk into one line and 74, and any other exception (a bug) into one line and exit
    code 70; a traceback only with --debug. Once the command has done its work, one warning
    per misspelt NCCL variable and per variable naming a file NCCL reads the machine from
    (``_say_environment_warnings``): a refusal stays its one line."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from simnet.cli.console import READER_GONE

        READER_GONE[0] = False  # (a process may run several commands: an embedding, the tests)
        try:
            done = command(*args, **kwargs)
            _say_environment_warnings()
            if READER_GONE[0]:  # every file written; the reader of the table went away before it
                sys.exit(EXIT_BROKEN_PIPE)
            return done
        except InputError as exc:
            click.echo(str(exc), err=True)
            sys.exit(EXIT_BAD_INPUT)
        except MemoryError:
            click.echo("out of memory: this run needs more than the machine has free; use fewer GPUs, larger "
                       "pieces (chunk_size) or smaller sizes", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except BrokenPipeError:  # the reader went away (simnet topo check F | head -1): end quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # nothing more to flush at exit
            sys.exit(EXIT_BROKEN_PIPE)
        except KeyboardInterrupt:
            click.echo("interrupted (a sweep keeps every finished point: run it again to resume)"
                       if command.__name__ == "sweep" else "interrupted", err=True)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)  # skip interpreter shutdown: it would wait on killed worker pools
        except Exception as exc:
            if DEBUG["traceback"]:
                raise
            if isinstance(exc, OSError) and exc.errno in _WRITE_ERRORS:
                try:
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # not retried at exit
                except (OSError, ValueError, AttributeError):  # a stdout without a file (embedded, tests)
                    pass
                click.echo(f"cannot write the output: {os.strerror(exc.errno)}"
                           f"{f' ({exc.filename})' if exc.filename else ''}", err=True)
                sys.exit(EXIT_CANNOT_WRITE)
            from simnet.version import __version__

            click.echo(f"internal error in simnet {__version__} ({type(exc).__name__}: {exc}); this is a bug: "
                       "please report it with the command and its input files (--debug shows the traceback)",
                       err=True)
            sys.exit(EXIT_BUG)

    return wrapper


def _say_environment_warnings() -> None:
    """One warning line per NCCL or RCCL variable of the environment spelt nearly as one simnet
    reads but read by neither library nor simnet (``simnet.run.nccl_env.misspelt``), one per
    variable naming a file NCCL reads the machine from (``read_elsewhere``), and one naming
    those NCCL reads that simnet does not model (``read_by_nccl_only``)."""
    if any(name.upper().startswith(("NCCL_", "RCCL_")) for name in os.environ):
        from simnet.run.nccl_env import misspelt, read_by_nccl_only, read_elsewhere, set_empty

        for line in misspelt():
            click.echo(f"warning env_misspelt: {line}", err=True)
        for line in read_elsewhere() + read_by_nccl_only() + set_empty():
            click.echo(f"warning env_unread: {line}", err=True)


@contextmanager
def loading() -> Iterator[None]:
    """Import a command's modules with the cyclic garbage collector paused, and keep what
    they loaded out of its later passes (``gc.freeze``): loading the simulation's few
    hundred modules (numpy, networkx, pydantic's schemas) allocates objects by the hundred
    thousand and no garbage, and the collector, run every 700 allocations, took a sixth of a
    256-GPU ring's ``simnet run`` going over them (issue 34's start-up). A block that loads
    nothing new (modules already imported) freezes nothing."""
    modules = len(sys.modules)
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) > modules:
            gc.freeze()
        if paused:
            gc.enable()


class _DigitsAsWritten:
    """A number option read as written: digits 0-9 only (``int`` and ``float`` would read
    Arabic-Indic or full-width digits, ``-g ٢``, as 2)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.isascii():
            self.fail(f"{value!r} is not a number written in digits 0-9", param, ctx)
        if isinstance(value, str) and isinstance(self, click.types.IntParamType) and \
                not re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):  # click would say "not a valid integer range"
            self.fail(f"{value!r} is not a whole number; write one in the digits 0-9 (e.g. 8)", param, ctx)
        return super().convert(value, param, ctx)


class Whole(_DigitsAsWritten, click.types.IntParamType):
    """``type=int``, digits 0-9 only."""


class WholeRange(_DigitsAsWritten, click.IntRange):
    """``click.IntRange``, digits 0-9 only."""


class Real(_DigitsAsWritten, click.types.FloatParamType):
    """``type=float``, digits 0-9 only."""


class UsageError(click.UsageError):
    """A usage error shown as one line, ``simnet run: No such option: --jsn (see 'simnet run --help')``."""

    def show(self, file=None) -> None:
        where = self.ctx.command_path if self.ctx else "simnet"
        click.echo(f"{where}: {self.format_message()} (see '{where} --help')", err=True)


class OneLineUsage(click.Group):
    """The ``simnet`` group: click's usage errors (unknown option, missing argument, bad
    value) come out as one line and exit code 2, as every other bad input does."""

    def make_context(self, info_name, args, *rest, **kwargs):
        for i, arg in enumerate(args):  # click reads '' as a path to '.' (or as no value at all): refuse it
            option = arg[:-1] if arg.startswith("--") and arg.endswith("=") else \
                args[i - 1] if arg == "" and i and args[i - 1].startswith("-") else None
            if arg == "" or option:
                raise UsageError(f"{option}: an empty value; give one" + _EMPTY_HINT.get(option, "") if option else
                                 "an empty argument; give a name")
        twice = _given_twice(self, info_name, args)
        if twice:  # click keeps the last of an option given twice, without a word
            where, option = twice
            raise UsageError(f"{option} is given twice; give it once", where)
        try:
            return super().make_context(info_name, args, *rest, **kwargs)
        except click.UsageError as exc:
            raise one_line(exc) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise one_line(exc) from None


_EMPTY_HINT = {"--json": " (a file, or - for standard output)", "-o": " (a file)", "--output": " (a file)",
               "--csv": " (a file)", "--trace": " (a file)", "--plot": " (a folder)", "--out": " (a folder)",
               "-s": " (a size, e.g. '64 MiB')", "--size": " (a size, e.g. '64 MiB')"}
"""What an option's empty value should have been (``-s ''``: a size, not a file name)."""


def _given_twice(group: click.Group, info_name: str, args: list[str]) -> tuple[click.Context, str] | None:
    """(the subcommand's context, the option as written the second time) for the first option
    that takes one value and is given more than once on ``args`` (``-g 2 --gpus 4``), read as
    click reads them: an option's value is the next word unless attached (``--json=x``,
    ``-gx``), and words select subcommands of nested groups (``simnet topo export``); None if
    there is none."""
    command: click.Command = group
    context = click.Context(group, info_name=info_name)
    single: dict[str, str] = {}
    valued: set[str] = set()
    seen: set[str] = set()
    words = iter(args)
    for word in words:
        if word == "--":
            return None
        if word.startswith("-") and len(word) > 1:
            opt = word.split("=", 1)[0] if word.startswith("--") else word[:2]
            if opt in single:
                if single[opt] in seen:
                    return context, opt
                seen.add(single[opt])
            attached = "=" in word if word.startswith("--") else len(word) > 2
            if opt in valued and not attached:
                next(words, None)  # its value, whatever it looks like
        elif isinstance(command, click.Group) and word in command.commands:
            command = command.commands[word]
            context = click.Context(command, info_name=word, parent=context)
            options = [p for p in command.params if isinstance(p, click.Option)]
            single = {opt: p.name for p in options if not (p.multiple or p.is_flag or p.count) for opt in p.opts}
            valued = {opt for p in options if not (p.is_flag or p.count) for opt in p.opts}
            seen = set()
    return None


_CLICK_WORDS = ((" is not a valid integer.", " is not a whole number"), (" is not a valid float.", " is not a number"))
"""click's words for a number it could not read, and a user's (``'2.0' is not a whole number``)."""


def one_line(exc: click.UsageError) -> click.UsageError:
    if isinstance(exc, (UsageError, click.exceptions.NoArgsIsHelpError)):  # `simnet` alone: its help
        return exc
    message = exc.format_message()
    for theirs, ours in _CLICK_WORDS:
        message = message.replace(theirs, ours)
    return UsageError(message, exc.ctx)


