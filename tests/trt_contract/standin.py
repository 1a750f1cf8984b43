"""CONTRACT STAND-IN of the ``tensorrt`` module.

A strict stand-in generated from trt-api JSON; nothing it returns is ever reported as a result.

For one TensorRT version, :class:`ContractStandIn` builds a module object holding exactly what
``trt-api/tensorrt-<version>.json`` lists (the API surface of NVIDIA's binding wheel for that version): its classes
with their methods and properties, its enums with their values, its functions and constants, plus ``__version__``.
Any other attribute raises AttributeError, on the module, on a class and on an instance. Each method checks its
arguments against the pybind signatures (how many, which keyword names; not their types), records the call, and
returns a neutral stand-in value of its annotated return type: an instance of the class named by ``-> ClassName``,
None for ``-> None``, False / 0 / 0.0 / "" / [] / () / {} / b"" for builtins. Properties are readable, and writable
only where the JSON says they are not read-only.

What it checks: that code touches only names a version has, calls methods with arguments one of their signatures
accepts, and writes no read-only property. What it cannot check, because the JSON does not carry it, and what it
invents instead:

* It is not a TensorRT: it parses, builds and runs nothing, so every value it returns is a placeholder.
* Python protocol methods are not in the JSON. The stand-in supplies the few that Polygraphy relies on: iteration
  over an ``INetworkDefinition`` (by ``num_layers`` / ``get_layer``), ``int()``, ``==`` and hashing of enum values,
  ``__members__`` of enum classes.
* Enum values are numbered in the JSON's (alphabetical) order, not with TensorRT's numbers.
* Property types are not in the JSON. A property reads as the value last written to it, or the value a test preset
  with :meth:`ContractStandIn.make` / :meth:`ContractStandIn.on`, or a neutral value chosen from its name:
  ``is_*``/``has_*``/``platform_has_*``/``*_is_set`` False, ``name`` "", anything else 0 (most untyped TensorRT
  properties are counts, sizes, indices or flag masks).
* Run-time behaviour is not in the JSON: warnings (such as a DeprecationWarning), errors, logging.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import importlib.machinery
import json
import re
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterator

from tests.conftest import REFERENCE

TRT_API_DIR = REFERENCE / "trt-api"
# Module-level data type constants (``trt.float32``) and the DataType value each one is.
DATATYPE_CONSTANTS = {
    "float32": "FLOAT", "float16": "HALF", "bfloat16": "BF16", "int8": "INT8", "int32": "INT32", "int64": "INT64",
    "uint8": "UINT8", "bool": "BOOL", "fp8": "FP8", "int4": "INT4", "fp4": "FP4", "e8m0": "E8M0",
}
_OVERLOAD = re.compile(r"^\d+\.\s+")
_SIGNATURE = re.compile(r"^(?P<name>\w+)\((?P<params>.*)\)(?:\s*->\s*(?P<returns>.+))?$", re.DOTALL)
_UNSET = object()


def api_json_path(version: str) -> Path:
    """The recorded API surface of ``version``; an error saying where it was expected when it is missing."""
    path = TRT_API_DIR / f"tensorrt-{version}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the TensorRT contract tests check the backend against the recorded binding API of "
            f"each version in reference/trt-api (see reference/SOURCES.md); they refuse to pass without it."
        )
    return path


def recorded_versions() -> tuple[str, ...]:
    """Every TensorRT version whose binding API is recorded in trt-api/, oldest first."""
    found = [path.name.removeprefix("tensorrt-").removesuffix(".json") for path in TRT_API_DIR.glob("tensorrt-*.json")]
    if not found:
        raise FileNotFoundError(f"no tensorrt-*.json in {TRT_API_DIR}: the TensorRT contract tests need them")
    return tuple(sorted(found, key=lambda version: tuple(int(part) for part in version.split("."))))


@functools.lru_cache(maxsize=None)
def recorded_api(version: str) -> dict[str, Any]:
    """The ``module`` section of trt-api/tensorrt-<version>.json: class, enum and function name -> entry."""
    return json.loads(api_json_path(version).read_text())["module"]


def api_exists(version: str, dotted: str) -> bool:
    """Whether trt-api/tensorrt-<version>.json lists ``dotted`` ("Class", "Class.member" or "Enum.VALUE")."""
    return surface_has(recorded_api(version), dotted)


def surface_has(api: dict[str, Any], dotted: str) -> bool:
    """Whether the ``module`` section of an API surface lists ``dotted``."""
    if dotted == "__version__":
        return True  # the JSON's top-level "version"
    kind, _, member = dotted.partition(".")
    entry = api.get(kind)
    return entry is not None and (not member or member in entry.get("members", {}) or member in entry.get("values", []))


@dataclasses.dataclass(frozen=True)
class Call:
    """One use of the stand-in: ``new`` (a constructor), ``call`` (a method or function), ``get`` or ``set``."""

    action: str
    api: str  # "OnnxParser.set_flag", "IBuilderConfig.int8_calibrator", "Builder", "init_libnvinfer_plugins"
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    obj: Any = None  # the instance a method, property or constructor was used on


@dataclasses.dataclass(frozen=True)
class _Parameter:
    name: str
    required: bool
    variadic: str | None  # "*" or "**"


@dataclasses.dataclass(frozen=True)
class _Signature:
    text: str
    parameters: tuple[_Parameter, ...]  # without self
    returns: str

    def accepts(self, args: tuple, kwargs: dict) -> bool:
        if any(p.variadic for p in self.parameters):
            return True
        names = [p.name for p in self.parameters]
        if len(args) > len(names) or any(k not in names for k in kwargs):
            return False
        given = set(names[: len(args)])
        if given & set(kwargs):
            return False
        return all(p.name in given or p.name in kwargs for p in self.parameters if p.required)


def _split_top_level(text: str) -> list[str]:
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([<{":
            depth += 1
        elif char in ")]>}":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def _signatures(texts: list[str], is_method: bool) -> list[_Signature]:
    """pybind signatures; an overloaded function lists ``f(*args, **kwargs)`` and then ``1. f(...)``, ``2. f(...)``.

    Lines that are no signature (docstring text the introspection picked up, such as ``print(x.y)`` in an example)
    are skipped; an API left with no signature accepts any arguments and returns None.
    """
    overloads = [_OVERLOAD.sub("", t) for t in texts if _OVERLOAD.match(t)] or list(texts)
    found = []
    for text in overloads:
        match = _SIGNATURE.match(text.strip())
        if match is None or "." in match.group("params").split(":", 1)[0]:
            continue
        parameters = []
        for raw in _split_top_level(match.group("params")):
            variadic = "**" if raw.startswith("**") else "*" if raw.startswith("*") else None
            name = raw.lstrip("*").split(":", 1)[0].split("=", 1)[0].strip()
            parameters.append(_Parameter(name, variadic is None and " = " not in raw, variadic))
        if is_method and parameters and parameters[0].name == "self":
            parameters = parameters[1:]
        found.append(_Signature(text, tuple(parameters), (match.group("returns") or "None").strip()))
    return found


def _neutral_property_value(name: str) -> Any:
    if name.startswith(("is_", "has_", "platform_has_")) or name.endswith("_is_set"):
        return False
    return "" if name == "name" else 0


class _StandInType(type):
    """Metaclass: a missing class attribute is an AttributeError that names the version."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        standin = type.__getattribute__(cls, "__standin__")
        raise AttributeError(
            f"type object '{cls.__qualname__}' has no attribute '{name}' in TensorRT {standin.version} "
            f"(contract stand-in of {api_json_path(standin.version).name})",
            name=name, obj=cls,
        )


class _StandInObject(metaclass=_StandInType):
    """Base of every stand-in class. Only dunder names, so it adds nothing a strict lookup could find."""

    __slots__ = ("__standin_values__",)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        standin = type(self).__standin__
        raise AttributeError(
            f"'{type(self).__qualname__}' object has no attribute '{name}' in TensorRT {standin.version} "
            f"(contract stand-in of {api_json_path(standin.version).name})",
            name=name, obj=self,
        )

    def __setattr__(self, name, value):
        cls = type(self)
        if isinstance(getattr(cls, name, None), property) or not cls.__dict__.get("__standin_generated__"):
            object.__setattr__(self, name, value)  # a property (checked by it), or a Python subclass's own attribute
            return
        raise AttributeError(
            f"'{cls.__qualname__}' object has no attribute '{name}' to set in TensorRT {cls.__standin__.version}",
            name=name, obj=self,
        )

    def __repr__(self):
        return f"<contract stand-in {type(self).__qualname__} of TensorRT {type(self).__standin__.version}>"


class _EnumValue(_StandInObject):
    """Base of stand-in enum classes: one instance per value, compared and hashed by (enum, number)."""

    __slots__ = ()

    def __int__(self):
        return self.__standin_values__["value"]

    __index__ = __int__

    def __eq__(self, other):
        return type(other) is type(self) and int(other) == int(self)

    def __hash__(self):
        return hash((type(self).__qualname__, int(self)))

    def __repr__(self):
        return f"<{type(self).__qualname__}.{self.__standin_values__['name']}: {int(self)}>"


class ContractStandIn:
    """The contract stand-in of one TensorRT version: ``module`` to import as ``tensorrt``, and the ``calls`` made."""

    def __init__(self, api: dict[str, Any]):
        self.version: str = api["version"]
        self.api: dict[str, dict] = api["module"]
        self.calls: list[Call] = []
        self._overrides: dict[str, Any] = {}
        self._classes: dict[str, type] = {}
        self.module = self._build_module()

    @classmethod
    def for_version(cls, version: str) -> "ContractStandIn":
        return cls(json.loads(api_json_path(version).read_text()))

    @classmethod
    def without(cls, version: str, *removed: str) -> "ContractStandIn":
        """The stand-in of a DERIVED surface: ``version``'s recorded API with the entries ``removed`` taken out
        ("Class", "Enum.VALUE" or "Class.member"), for a test of how the code behaves where a version lacks an API.
        No such TensorRT was recorded; the test that uses one says which real surface it comes from and why."""
        api = json.loads(api_json_path(version).read_text())
        for dotted in removed:
            name, _, member = dotted.partition(".")
            entry = api["module"][name]  # KeyError: the real surface has no such entry to remove
            if not member:
                del api["module"][name]
            elif member in entry.get("values", []):
                entry["values"].remove(member)
            else:
                del entry["members"][member]
        return cls(api)

    # ---- what tests use ----

    def make(self, class_name: str, **properties) -> Any:
        """An instance of ``class_name`` whose listed properties read as ``properties`` (what TensorRT would report)."""
        cls = self._classes[class_name]
        unknown = [p for p in properties if not isinstance(getattr(cls, p, None), property)]
        if unknown:
            raise AttributeError(f"{class_name} has no properties {unknown} in TensorRT {self.version}")
        return self._instance(cls, properties)

    def on(self, api: str, value: Any) -> None:
        """Make ``api`` ("Class.member") return ``value``; a callable is called with the instance and the arguments."""
        class_name, member = api.split(".", 1)
        if member not in self.api.get(class_name, {}).get("members", {}):
            raise AttributeError(f"{api} is not in TensorRT {self.version}: the stand-in cannot be told to answer it")
        self._overrides[api] = value

    def has(self, dotted: str) -> bool:
        """Whether this surface lists ``dotted`` ("Class", "Class.member" or "Enum.VALUE")."""
        return surface_has(self.api, dotted)

    def calls_to(self, api: str, action: str | None = None) -> list[Call]:
        return [c for c in self.calls if c.api == api and (action is None or c.action == action)]

    def enum(self, dotted: str) -> Any:
        """The stand-in value of ``EnumName.VALUE``."""
        enum_name, value = dotted.split(".")
        return getattr(self._classes[enum_name], value)

    # ---- generation ----

    def _build_module(self) -> types.ModuleType:
        module = types.ModuleType("tensorrt", f"Contract stand-in of TensorRT {self.version}: not a TensorRT.")
        module.__spec__ = importlib.machinery.ModuleSpec("tensorrt", loader=None)
        module.__version__ = self.version
        for name, entry in self.api.items():
            if entry["kind"] == "enum":
                self._classes[name] = self._enum_class(name, entry["values"], entry["members"])
        for name in self._class_order():
            self._classes[name] = self._class(name, self.api[name])
        for name, entry in self.api.items():
            kind = entry["kind"]
            if kind in ("class", "enum"):
                setattr(module, name, self._classes[name])
            elif kind == "function":
                setattr(module, name, self._callable(name, _signatures(entry["signatures"], False), name))
            elif kind in ("str", "bool"):
                setattr(module, name, ast.literal_eval(entry["value"]))
            else:
                setattr(module, name, self._constant(name, kind))
        version = self.version

        def missing(name):
            raise AttributeError(
                f"module 'tensorrt' has no attribute '{name}' in TensorRT {version} (contract stand-in)")

        module.__getattr__ = missing
        return module

    def _class_order(self) -> list[str]:
        """Class names, each after its bases."""
        ordered: list[str] = []

        def visit(name):
            if name in ordered:
                return
            for base in self.api[name].get("bases", []):
                if self.api.get(base, {}).get("kind") == "class":
                    visit(base)
            ordered.append(name)

        for name, entry in self.api.items():
            if entry["kind"] == "class":
                visit(name)
        return ordered

    def _class(self, name: str, entry: dict) -> type:
        members = entry["members"]
        bases = tuple(self._classes[b] for b in entry.get("bases", []) if b in self._classes) or (_StandInObject,)
        namespace: dict[str, Any] = {"__slots__": (), "__standin_generated__": True, "__module__": "tensorrt",
                                     "__qualname__": name, "__standin__": self}
        nested_enums = {kind for m in members.values() if (kind := m["kind"]) not in ("method", "property")}
        for enum_name in nested_enums:
            values = sorted(m for m, body in members.items() if body["kind"] == enum_name)
            enum_cls = self._shared_nested_enum(name, enum_name, values)
            namespace[enum_name] = enum_cls
            for value in values:
                namespace[value] = getattr(enum_cls, value)
        for member, body in members.items():
            if member in namespace:
                continue
            if body["kind"] == "property":
                namespace[member] = self._property(name, member, body.get("readonly", False))
            elif member == "__init__":
                namespace["__init__"] = self._constructor(name, _signatures(body["signatures"], True))
            else:
                namespace[member] = self._method(name, member, _signatures(body["signatures"], True))
        if name == "INetworkDefinition":
            namespace.update(self._network_protocol())
        return _StandInType(name, bases, namespace)

    def _shared_nested_enum(self, owner: str, enum_name: str, values: list[str]) -> type:
        """``ILogger.Severity`` is also ``Logger.Severity``: one nested enum per name."""
        key = f"nested:{enum_name}"
        if key not in self._classes:
            self._classes[key] = self._enum_class(f"{owner}.{enum_name}", values, {})
        return self._classes[key]

    def _enum_class(self, name: str, values: list[str], members: dict) -> type:
        namespace: dict[str, Any] = {"__slots__": (), "__standin_generated__": True, "__module__": "tensorrt",
                                     "__qualname__": name, "__standin__": self}
        for member, body in members.items():
            if body["kind"] == "property" and member not in ("name", "value"):
                namespace[member] = self._property(name, member, body.get("readonly", False))
        namespace["name"] = property(lambda value: value.__standin_values__["name"])
        namespace["value"] = property(lambda value: value.__standin_values__["value"])

        def new(cls, number):
            found = [v for v in cls.__members__.values() if int(v) == number]
            if not found:
                raise ValueError(f"{name}({number}): no such value in the contract stand-in of TensorRT {self.version}")
            return found[0]

        namespace["__new__"] = new
        namespace["__init__"] = lambda value, number=None: None
        cls = _StandInType(name, (_EnumValue,), namespace)
        by_name = {}
        for number, value in enumerate(values):
            by_name[value] = self._instance(cls, {"name": value, "value": number})
            type.__setattr__(cls, value, by_name[value])
        type.__setattr__(cls, "__members__", types.MappingProxyType(by_name))
        return cls

    def _constant(self, name: str, kind: str) -> Any:
        """A module-level constant whose JSON kind is a type: ``float32`` of kind DataType is DataType.FLOAT."""
        enum_cls = self._classes.get(kind) or self._classes.get(f"nested:{kind}")
        if enum_cls is None:
            raise ValueError(f"tensorrt-{self.version}.json: module constant {name!r} has the unknown kind {kind!r}")
        member = DATATYPE_CONSTANTS.get(name, name) if kind == "DataType" else name
        if member in enum_cls.__members__:
            return enum_cls.__members__[member]
        return self._instance(enum_cls, {"name": name, "value": -1})  # an introspection leftover, such as `value`

    def _instance(self, cls: type, properties: dict[str, Any]) -> Any:
        obj = object.__new__(cls)
        object.__setattr__(obj, "__standin_values__", dict(properties))
        return obj

    def _property(self, owner: str, member: str, readonly: bool) -> property:
        api = f"{owner}.{member}"

        def read(obj):
            self.calls.append(Call("get", api, obj=obj))
            values = obj.__standin_values__
            if member in values:
                return values[member]
            override = self._overrides.get(api, _UNSET)
            if override is not _UNSET:
                return override(obj) if callable(override) else override
            return _neutral_property_value(member)

        def write(obj, value):
            self.calls.append(Call("set", api, (value,), obj=obj))
            obj.__standin_values__[member] = value

        return property(read, None if readonly else write, doc=f"{api} (contract stand-in)")

    def _constructor(self, owner: str, signatures: list[_Signature]) -> Callable:
        def __init__(obj, *args, **kwargs):
            if not signatures:
                raise TypeError(
                    f"tensorrt.{owner}: No constructor defined! (contract stand-in of TensorRT {self.version})")
            self._check(owner, signatures, args, kwargs)
            self.calls.append(Call("new", owner, args, kwargs, obj))
            object.__setattr__(obj, "__standin_values__", {})

        return __init__

    def _method(self, owner: str, member: str, signatures: list[_Signature]) -> Callable:
        api = f"{owner}.{member}"

        def method(obj, *args, **kwargs):
            self._check(api, signatures, args, kwargs)
            self.calls.append(Call("call", api, args, kwargs, obj))
            override = self._overrides.get(api, _UNSET)
            if override is not _UNSET:
                return override(obj, *args, **kwargs) if callable(override) else override
            return self._neutral(signatures[0].returns if signatures else "None")

        method.__name__ = member
        method.__qualname__ = api
        return method

    def _callable(self, api: str, signatures: list[_Signature], name: str) -> Callable:
        def function(*args, **kwargs):
            self._check(api, signatures, args, kwargs)
            self.calls.append(Call("call", api, args, kwargs))
            return self._neutral(signatures[0].returns if signatures else "None")

        function.__name__ = name
        return function

    def _network_protocol(self) -> dict[str, Callable]:
        """The real INetworkDefinition is a sequence of its layers; Polygraphy iterates it."""

        def length(network):
            return network.num_layers

        def item(network, index):
            if not 0 <= index < length(network):
                raise IndexError(index)
            return network.get_layer(index)

        return {"__len__": length, "__getitem__": item,
                "__iter__": lambda network: (network.get_layer(i) for i in range(length(network)))}

    def _check(self, api: str, signatures: list[_Signature], args: tuple, kwargs: dict) -> None:
        if signatures and not any(s.accepts(args, kwargs) for s in signatures):
            accepted = "\n    ".join(s.text for s in signatures)
            raise TypeError(
                f"{api}(): incompatible function arguments in TensorRT {self.version} (contract stand-in). "
                f"Supported signatures:\n    {accepted}\nInvoked with args={args!r}, kwargs={kwargs!r}"
            )

    def _neutral(self, annotation: str) -> Any:
        """A placeholder of the annotated type; never a TensorRT result."""
        annotation = annotation.strip().split("::")[-1]
        lowered = annotation.lower()
        if annotation == "None":
            return None
        simple = {"bool": False, "int": 0, "float": 0.0, "str": "", "bytes": b"", "buffer": b"", "dict": {}}
        if lowered in simple:
            return simple[lowered]
        if lowered.startswith("list"):
            return []
        if lowered.startswith("tuple"):
            return ()
        for candidate in (annotation, annotation[1:] if annotation.startswith("I") else None):
            cls = self._classes.get(candidate) if candidate else None
            if cls is not None and issubclass(cls, _EnumValue):
                return next(iter(cls.__members__.values()))
            if cls is not None:
                return self._instance(cls, {})
        return None


@contextlib.contextmanager
def installed_as_tensorrt(standin: ContractStandIn) -> Iterator[ContractStandIn]:
    """Make ``import tensorrt`` give the stand-in, with a fresh Polygraphy that sees only it; undo both afterwards.

    Polygraphy's lazy modules keep the first ``tensorrt`` they import, so Polygraphy is dropped from ``sys.modules``
    before and after: each version is seen by a Polygraphy imported for it alone.
    """
    previous = sys.modules.get("tensorrt", _UNSET)
    _forget_polygraphy()
    sys.modules["tensorrt"] = standin.module
    try:
        yield standin
    finally:
        _forget_polygraphy()
        if previous is _UNSET:
            sys.modules.pop("tensorrt", None)
        else:
            sys.modules["tensorrt"] = previous


def _forget_polygraphy() -> None:
    for name in [n for n in sys.modules if n == "polygraphy" or n.startswith("polygraphy.")]:
        del sys.modules[name]
