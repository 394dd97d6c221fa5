#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# gen-config.sh: writes one icecast.xml-format config used for both servers in a benchmark run
# (Rimecast reads the same file as Icecast 2.4). It owns only the run directory it is given:
# DIR/server.xml and DIR/log/ (world-writable, the server drops to nobody). It does not start
# anything. Usage: gen-config.sh --dir DIR [--port 18000] [--password hackme] [--clients 100000]
#   [--sources 12000] [--burst-size 65536] [--queue-size 524288] [--workers 0]
#   [--write-window MS] [--webroot DIR] [--adminroot DIR] [--loglevel 2] [--location TOKEN]
#   [--name FILE (default server.xml)] [--extra XML (inserted at the top level: relays, ...)]
#   [--tls-port P --ssl-cert PEM (a second socket with <ssl>1, the combined certificate + key)]
# The <location> token lets a script check that the server answering is the one it started.
set -eu

dir=""; port=18000; location="loadtest-$$"; password=hackme; clients=100000; sources=12000
burst=65536; queue=524288; workers=0; loglevel=2; window=""; name=server.xml
webroot=/usr/share/icecast2/web; adminroot=/usr/share/icecast2/admin; extra=""; tls_port=""; ssl_cert=
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --password) password=$2; shift 2 ;;
        --clients) clients=$2; shift 2 ;;
        --sources) sources=$2; shift 2 ;;
        --burst-size) burst=$2; shift 2 ;;
        --queue-size) queue=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        --write-window) window=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --webroot) webroot=$2; shift 2 ;;
        --adminroot) adminroot=$2; shift 2 ;;
        --loglevel) loglevel=$2; shift 2 ;;
        --location) location=$2; shift 2 ;;
        --extra) extra=$2; shift 2 ;;
        --tls-port) tls_port=$2; shift 2 ;;
        --ssl-cert) ssl_cert=$2; shift 2 ;;
        *) echo "gen-config.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$dir" ] || { echo "gen-config.sh: --dir is required" >&2; exit 2; }
mkdir -p "$dir/log"
chmod 777 "$dir/log"
chmod a+rx "$dir"

# <workers> and <write-window> are Rimecast settings; Icecast 2.4 ignores unknown elements.
# workers 0 = one per CPU; no --write-window = the server's default (500 ms); 0 = low latency.
workers_xml=""
[ "$workers" -gt 0 ] && workers_xml="<workers>$workers</workers>"
[ -n "$window" ] && workers_xml="$workers_xml<write-window>$window</write-window>"

tls_socket=""; tls_paths=""
if [ -n "$tls_port" ]; then
    tls_socket="<listen-socket><port>$tls_port</port><bind-address>127.0.0.1</bind-address><ssl>1</ssl></listen-socket>"
    tls_paths="<ssl-certificate>$ssl_cert</ssl-certificate>"
fi

cat > "$dir/$name" <<XML
<icecast>
    <location>$location</location>
    <admin>loadtest@localhost</admin>
    <hostname>127.0.0.1</hostname>
    <limits>
        <clients>$clients</clients>
        <sources>$sources</sources>
        <queue-size>$queue</queue-size>
        <burst-size>$burst</burst-size>
        <header-timeout>15</header-timeout>
        <source-timeout>10</source-timeout>
        $workers_xml
    </limits>
    <authentication>
        <source-password>$password</source-password>
        <relay-password>$password</relay-password>
        <admin-user>admin</admin-user>
        <admin-password>$password</admin-password>
    </authentication>
    <listen-socket>
        <port>$port</port>
        <bind-address>127.0.0.1</bind-address>
    </listen-socket>
    $tls_socket
    <fileserve>1</fileserve>
    <paths>
        <basedir>$dir</basedir>
        <logdir>$dir/log</logdir>
        <pidfile>$dir/log/server.pid</pidfile>
        <webroot>$webroot</webroot>
        <adminroot>$adminroot</adminroot>
        $tls_paths
    </paths>
    <logging>
        <accesslog>access.log</accesslog>
        <errorlog>error.log</errorlog>
        <loglevel>$loglevel</loglevel>
    </logging>
    <security>
        <chroot>0</chroot>
        <changeowner>
            <user>nobody</user>
            <group>nogroup</group>
        </changeowner>
    </security>
    $extra
</icecast>
XML
chmod a+r "$dir/$name"
echo "$dir/$name"
