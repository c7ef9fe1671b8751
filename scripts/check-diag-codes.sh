#!/usr/bin/env bash
# Diagnostic codes are passed by name (CV_E_*, from common/diag_codes.h),
# never as a bare number: a number at a diagnostic function's code argument
# (any function with a parameter `int ...code`), or assigned to or compared
# with a variable or field named *code, is reported with its file and line;
# so is `return cv_diag_error(...), -1;` (say `return cv_diag_fail(...);`).
# Tests keep numbers (they pin what a user sees); the artifact runtime and the
# CUDA host runtime are built without common/ and are left out.
# Usage: scripts/check-diag-codes.sh [ROOT]   (exit 1 and file:line per number)
set -euo pipefail
root=${1:-.}
list=$root/common/diag_codes.h
[ -f "$list" ] || { echo "check-diag-codes: no $list" >&2; exit 2; }
cd "$root"
git_files() { git ls-files -co --exclude-standard -- '*.c' '*.h' 2>/dev/null; }
files=$(git_files || true)
[ -n "$files" ] || files=$(find . -name '*.[ch]' -not -path './build/*' | sed 's|^\./||')
grep -vE '^(tests|fuzz|bench|build|compiler-core/runtime|compiler-core/backend/cuda/host)/' \
    <<<"$files" | perl -e '
use strict; use warnings;
my %codes;
open my $l, "<", "common/diag_codes.h" or die;
while (<$l>) { $codes{$1} = 1 while /X\(\w+,\s*(\d+),/g; }
die "check-diag-codes: no codes in common/diag_codes.h\n" unless %codes;
my (%text, %mask);
while (my $f = <STDIN>) {
    chomp $f;
    next unless -f $f;
    open my $h, "<", $f or next;
    local $/; my $t = <$h>; close $h;
    my $m = $t;
    # comments, strings and character constants blanked, newlines kept
    $m =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27)}
           {my $x = $1; $x =~ s/[^\n]/ /g; $x}gse;
    ($text{$f}, $mask{$f}) = ($t, $m);
}
# The diagnostic functions: name -> index of the code parameter.
my (%global, %local);
for my $f (keys %mask) {
    while ($mask{$f} =~ /(\bstatic\s+)?(?:[\w*]+\s+)+\**(\w+)\s*\(([^()]*)\)\s*(?:__attribute__|\{|;)/g) {
        my ($static, $name, @params) = ($1, $2, split /,/, $3);
        for my $i (0 .. $#params) {
            next unless $params[$i] =~ /^\s*(?:const\s+)?(?:int|cv_diag_code)\s+\w*code\s*$/;
            if ($static) { $local{"$f:$name"} = $i } else { $global{$name} = $i }
        }
    }
}
my $bad = 0;
sub report {
    my ($f, $pos, $num) = @_;
    my $line = 1 + (substr($mask{$f}, 0, $pos) =~ tr/\n//);
    print "$f:$line: diagnostic code $num as a bare number: use its name (common/diag_codes.h)\n";
    $bad = 1;
}
sub numbers_in {
    my ($f, $a, $b) = @_;
    my $s = substr($mask{$f}, $a, $b - $a);
    while ($s =~ /(?<![\w.])([1-9]\d{3})(?![\w.])/g) {
        report($f, $a + $-[1], $1) if $codes{$1};
    }
}
for my $f (sort keys %mask) {
    my $m = $mask{$f};
    while ($m =~ /\b(\w+)\s*\(/g) {
        my $name = $1;
        my $idx = $local{"$f:$name"} // $global{$name};
        next unless defined $idx;
        my $resume = pos($m);
        my ($depth, $start, $arg, $i) = (0, $resume, 0, $resume - 1);
        for (; $i < length $m; $i++) {
            my $c = substr($m, $i, 1);
            if ($c =~ /[(\[{]/) { $depth++ }
            elsif ($c =~ /[)\]}]/) { last if --$depth == 0 }
            elsif ($c eq "," && $depth == 1) {
                numbers_in($f, $start, $i) if $arg == $idx;
                $arg++; $start = $i + 1;
            }
        }
        numbers_in($f, $start, $i) if $arg == $idx && $i < length $m;
        if ($name eq "cv_diag_error" && substr($m, 0, $resume) =~ /\breturn\s*\(?\s*cv_diag_error\s*\($/
            && substr($m, $i + 1, 40) =~ /^\s*,\s*-1\b/) {
            my $line = 1 + (substr($m, 0, $resume) =~ tr/\n//);
            print "$f:$line: return cv_diag_error(...), -1: use return cv_diag_fail(...)\n";
            $bad = 1;
        }
        pos($m) = $resume;
    }
    while ($m =~ /\b\w*code\s*(?:[!=]=|=(?!=))\s*\(?\s*([1-9]\d{3})(?![\w.])/g) {
        report($f, $-[1], $1) if $codes{$1};
    }
}
exit $bad;
'
