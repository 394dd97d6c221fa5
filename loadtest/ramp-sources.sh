#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ramp-sources.sh: the classic source ramp. Starts real source clients (ezstream, one process per
# mount /loadN, looping a 128 kbit/s MP3 and an Ogg Vorbis file) in steps: STEP sources (half MP3,
# half Vorbis) every DELAY seconds until COUNT, then holds until killed (SIGTERM/SIGINT stops them
# all). It owns DIR (generated media, ezstream configs, pid and count files) and nothing else;
# it does not sample or judge the server (sample.py reads --count-file as the source count).
# For counts beyond what processes allow, use swarm --sources (paced libshout sources, one process).
set -u
host=127.0.0.1; port=8000; password=hackme; count=100; step=10; delay=10; first=1
dir=""; prefix=/load; hold=0
usage() {
    echo "usage: ramp-sources.sh --dir DIR [--host H] [--port P] [--password PW] [--count N]" >&2
    echo "       [--step 10] [--delay SEC] [--first 1] [--prefix /load] [--hold SEC (0 = until killed)]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --host) host=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --password) password=$2; shift 2 ;;
        --count) count=$2; shift 2 ;;
        --step) step=$2; shift 2 ;;
        --delay) delay=$2; shift 2 ;;
        --first) first=$2; shift 2 ;;
        --prefix) prefix=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --hold) hold=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ -n "$dir" ] || usage
command -v ezstream >/dev/null || { echo "ramp-sources.sh: ezstream not found" >&2; exit 1; }
mkdir -p "$dir/conf"
pidfile=$dir/sources.pids; countfile=$dir/sources.count
: > "$pidfile"; echo 0 > "$countfile"

# Test media: 20 s of pink noise (so Vorbis really needs about 128 kbit/s), MP3 CBR 128 kbit/s
# and Ogg Vorbis managed at 128 kbit/s, made once.
make_media() {
    local mp3=$dir/loop.mp3 ogg=$dir/loop.ogg
    [ -s "$mp3" ] || ffmpeg -v error -y -f lavfi -i "anoisesrc=color=pink:amplitude=0.3:duration=20" \
        -ac 2 -ar 44100 -c:a libmp3lame -b:a 128k "$mp3" || return 1
    [ -s "$ogg" ] || ffmpeg -v error -y -f lavfi -i "anoisesrc=color=pink:amplitude=0.3:duration=20" \
        -ac 2 -ar 44100 -c:a libvorbis -b:a 128k -minrate 128k -maxrate 128k "$ogg" || return 1
}
make_media || { echo "ramp-sources.sh: cannot make test media with ffmpeg" >&2; exit 1; }

write_conf() {   # $1 = mount index, $2 = MP3|Ogg
    local file=$dir/conf/src$1.xml media=$dir/loop.mp3
    [ "$2" = Ogg ] && media=$dir/loop.ogg
    cat > "$file" <<XML
<ezstream>
  <servers><server>
    <hostname>$host</hostname><port>$port</port><password>$password</password>
    <protocol>HTTP</protocol><tls>None</tls><reconnect_attempts>0</reconnect_attempts>
  </server></servers>
  <streams><stream>
    <mountpoint>$prefix$1</mountpoint><format>$2</format>
    <stream_name>loadtest $1</stream_name><stream_bitrate>128</stream_bitrate>
  </stream></streams>
  <intakes><intake>
    <type>file</type><filename>$media</filename><stream_once>No</stream_once>
  </intake></intakes>
</ezstream>
XML
    chmod 600 "$file"
    echo "$file"
}

pids=()
stop_all() {
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
    wait 2>/dev/null
    exit 0
}
trap stop_all TERM INT

started=0; i=$first; last=$((first + count - 1))
while [ $started -lt "$count" ]; do
    for ((k = 0; k < step && started < count; k++)); do
        fmt=MP3; [ $k -ge $((step / 2)) ] && fmt=Ogg
        conf=$(write_conf "$i" "$fmt")
        ezstream -q -c "$conf" >/dev/null 2>>"$dir/ezstream.err" </dev/null &
        pids+=($!); echo $! >> "$pidfile"
        i=$((i + 1)); started=$((started + 1))
    done
    echo "$started" > "$countfile"
    echo "ramp-sources: $started/$count sources started (up to $prefix$((i - 1)) of $prefix$last)" >&2
    [ $started -lt "$count" ] && sleep "$delay"
done
if [ "$hold" != 0 ]; then
    sleep "$hold"
    stop_all
fi
while :; do sleep 1; done
