# A stand-in for nixpkgs with only what lib/ touches, for evaluating genKernelFlakeOutputs without nixpkgs.
# A derivation is its attribute set plus `outPath` (`outDir`/<name>), so tests can read its phases, and run
# them, with `pythonPrefix` (a real environment with torch and kernel-builder) standing in for Python envs.
{
  outDir ? "/stub/out",
  pythonPrefix ? "/stub/python",
  # The torch this "nixpkgs" has: its version, and its CUDA version for the CUDA build.
  torchVersion ? "2.13.0",
  cudaVersion ? "13.0",
  pythonVersion ? "3.12",
}:
let
  derivation =
    attrs:
    let
      name = attrs.name or "${attrs.pname}-${attrs.version}";
    in
    # As in nixpkgs, `passthru` attributes appear on the derivation itself.
    attrs
    // attrs.passthru or { }
    // {
      inherit name;
      type = "derivation";
      outPath = "${outDir}/${name}";
    };
  program = name: { outPath = "/stub/${name}"; };
  cudaPackages = {
    cudaMajorMinorVersion = cudaVersion;
    cudatoolkit = program "cuda-${cudaVersion}";
  };
  torch = cudaSupport: {
    pname = "torch";
    version = torchVersion;
    inherit cudaSupport;
    cudaPackages = if cudaSupport then cudaPackages else null;
    outPath = "/stub/torch${if cudaSupport then "-cuda" else ""}";
  };
  pythonPackages = {
    python = python3;
    buildPythonPackage = attrs: derivation attrs;
    torch = torch false;
    torchWithoutCuda = torch false;
    torchWithCuda = torch true;
  };
  # Every other package of the set: a named placeholder.
  ps = pythonPackages // builtins.listToAttrs (
    map (name: { inherit name; value = program "python-${name}"; }) [
      "setuptools" "tomli" "tomlkit" "packaging" "huggingface-hub" "scikit-build-core" "pyelftools" "auditwheel" "abi3info" "rich" "filelock" "jinja2"
      "pytest" "mypy" "ruff" "numpy" "kernels"
    ]
  );
  python3 = {
    inherit pythonVersion;
    pkgs = ps;
    withPackages = select: {
      outPath = pythonPrefix;
      packages = select ps;
    };
  };
in
{
  inherit python3 cudaPackages;
  stdenv.mkDerivation = derivation;
  mkShell = attrs: derivation ({ name = "shell"; } // attrs);
  symlinkJoin = derivation;
  cmake = program "cmake";
  ninja = program "ninja";
  lib.getLicenseFromSpdxId = spdxId: { inherit spdxId; };
}
