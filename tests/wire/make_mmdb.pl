#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Writes a small MaxMind-format country database for the tests:
#   make_mmdb.pl OUT.mmdb 127.0.0.0/8=DE 198.51.100.0/24=FR 2001:db8::/32=NL ...
# Each network gets {country => {iso_code => CC}}, as in GeoLite2-Country. Reserved and
# documentation ranges are kept (the tests' addresses are such ranges).
use strict;
use warnings;
use MaxMind::DB::Writer::Tree;

my $out = shift @ARGV or die "usage: $0 OUT.mmdb NETWORK=CC...\n";
my %types = (country => 'map', iso_code => 'utf8_string');
my $tree = MaxMind::DB::Writer::Tree->new(
    ip_version               => 6,
    record_size              => 24,
    database_type            => 'Rimecast-Test-Country',
    languages                => ['en'],
    description              => { en => 'Rimecast test countries' },
    remove_reserved_networks => 0,
    map_key_type_callback    => sub { $types{ $_[0] } },
);
for my $arg (@ARGV) {
    my ($net, $cc) = split /=/, $arg, 2;
    die "bad argument: $arg\n" unless defined $cc;
    $tree->insert_network($net, { country => { iso_code => $cc } });
}
open my $fh, '>:raw', $out or die "$out: $!\n";
$tree->write_tree($fh);
close $fh or die "$out: $!\n";
