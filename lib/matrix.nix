# The variant matrix: kernel_builder/formats/build-matrix.json, the file the Python tool reads (kernel_builder/formats/matrix.py
# validates it and records why its entries are what they are). Each entry gains parsed versions.
let
  versions = import ./versions.nix;
  data = builtins.fromJSON (builtins.readFile ../kernel_builder/formats/build-matrix.json);
  parseEntry =
    entry:
    entry
    // {
      torchVersion = versions.parse entry.torch; # [ 2 13 ]
      computeVersion = if entry ? version then versions.majorMinor (versions.parse entry.version) else null;
      fullComputeVersion = if entry ? version then versions.parse entry.version else null;
    };
in
if data.format != 1 then
  throw "kernel-builder: kernel_builder/formats/build-matrix.json has format ${toString data.format}; this lib reads format 1"
else
  rec {
    entries = map parseEntry data.entries;
    # Every system some entry names, in the order they first appear.
    systems = builtins.foldl' (seen: system: if builtins.elem system seen then seen else seen ++ [ system ]) [ ] (
      builtins.concatMap (entry: entry.systems) entries
    );
  }
