# The candidate variants of a project: every matrix entry that applies to it, on each of the entry's systems,
# as kernel_builder/pipeline/plan/candidates.py lists them (`kernel-builder list-variants --json`), in the same order.
let
  inherit (builtins)
    any
    concatMap
    elem
    filter
    length
    map
    ;
  versions = import ./versions.nix;
  variants = import ./variants.nix;
  matrix = import ./matrix.nix;

  # Matrix entries of `backend` within the project's Torch and CUDA bounds (and not older than its stable ABI).
  applicableEntries =
    project: backend:
    let
      abi = project.stableAbiFor backend;
    in
    filter (
      entry:
      entry.backend == backend
      && versions.withinBounds entry.torchVersion project.torchMinver project.torchMaxver
      && (abi == null || !(versions.lessThan entry.torchVersion (versions.majorMinor (versions.parse abi))))
      && (
        backend != "cuda"
        || entry.fullComputeVersion == null
        || versions.withinBounds entry.fullComputeVersion project.cudaMinver project.cudaMaxver
      )
    ) matrix.entries;

  sameCompute =
    a: b:
    a.entry.backend == b.entry.backend
    && a.entry.fullComputeVersion == b.entry.fullComputeVersion
    && a.system == b.system;

  compiledCandidates =
    project: backend:
    let
      abi = project.stableAbiFor backend;
      abiVersion = if abi == null then null else versions.majorMinor (versions.parse abi);
      pairs = concatMap (entry: map (system: { inherit entry system; }) entry.systems) (
        applicableEntries project backend
      );
      # With the stable ABI one Torch serves every newer one: keep the newest Torch per (compute, system),
      # required when any entry it stands for is.
      peers = pair: filter (sameCompute pair) pairs;
      newer = pair: other: versions.lessThan pair.entry.torchVersion other.entry.torchVersion;
      newest = pair: !(any (newer pair) (peers pair));
      chosen = if abi == null then pairs else filter newest pairs;
      make = pair: {
        variant = variants.compiledVariantName {
          torch = pair.entry.torchVersion;
          inherit backend;
          version = pair.entry.computeVersion;
          inherit (pair) system;
          stableAbi = abiVersion;
        };
        inherit backend;
        inherit (pair) system entry;
        required = if abi == null then pair.entry.required else any (other: other.entry.required) (peers pair);
        stableAbi = abiVersion;
      };
    in
    map make chosen;

  noarchCandidate = backend: {
    variant = variants.noarchVariantName backend;
    inherit backend;
    system = null;
    entry = null;
    required = true;
    stableAbi = null;
  };

  # Every candidate: compiled ones per backend in matrix order, then the pure-Python ones.
  candidates =
    project:
    concatMap (compiledCandidates project) project.aotBackends ++ map noarchCandidate project.noarchBackends;

  # The candidates a system builds: its compiled variants and every pure-Python variant.
  candidatesFor =
    project: system: filter (candidate: candidate.system == null || candidate.system == system) (candidates project);
in
{
  inherit applicableEntries candidates candidatesFor;
}
