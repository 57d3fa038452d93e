# Dot-separated versions as lists of integers, compared the way kernel-builder compares them
# (kernel_builder/config/values.py): a bound compares the candidate cut or padded to the bound's length,
# so `maxver = "2.12"` admits 2.12.3 and `minver = "13"` admits 13.2.
let
  inherit (builtins) elemAt filter genList isString length match split;

  toInt = digits: builtins.fromJSON (builtins.head (match "0*([0-9]+)" digits));

  # "2.13" -> [ 2 13 ]
  parse =
    text:
    if !(isString text) || match "[0-9]+(\\.[0-9]+)*" text == null then
      throw "kernel-builder: invalid version ${builtins.toJSON text}: expected numbers separated by dots, e.g. \"2.12\""
    else
      map toInt (filter isString (split "\\." text));

  # The first `width` parts, padded with zeros.
  resize = width: parts: genList (i: if i < length parts then elemAt parts i else 0) width;

  # -1, 0 or 1, comparing lists of the same length part by part.
  compare =
    a: b:
    let
      go =
        i:
        if i == length a then
          0
        else if elemAt a i < elemAt b i then
          -1
        else if elemAt a i > elemAt b i then
          1
        else
          go (i + 1);
    in
    go 0;

  # Like Python's tuple comparison after padding both to one length.
  lessThan =
    a: b:
    let
      width = if length a > length b then length a else length b;
    in
    compare (resize width a) (resize width b) < 0;

  # Whether `candidate` (a list) lies within the optional string bounds `minver` and `maxver`.
  withinBounds =
    candidate: minver: maxver:
    let
      atLeast = bound: compare (resize (length bound) candidate) bound >= 0;
      atMost = bound: compare (resize (length bound) candidate) bound <= 0;
    in
    (minver == null || atLeast (parse minver)) && (maxver == null || atMost (parse maxver));

  # [ major minor ]: "12.6.3" -> [ 12 6 ], "2" -> [ 2 0 ]
  majorMinor = parts: resize 2 parts;

  # "2.9.1+cu128" -> "2.9.1": the release part of a Python package version.
  release = version: builtins.head (match "([0-9]+(\\.[0-9]+)*).*" version);
in
{
  inherit
    parse
    compare
    lessThan
    withinBounds
    majorMinor
    release
    ;
}
