# make bench's picture (tools/bench.sh): out/bench.png from the run's data.
#   out/bw-<nic>.dat:  test bytes MB/s           (path MTU 1024)
#   out/lat-<nic>-<test>.dat: 1..5 and min, median, p99, p99.9, max (2 B, usec)
# Left: bandwidth against message size; right: the latency distribution.
# Variables: out (directory), a and b (the two NICs, vrnic and rxe).
set terminal pngcairo size 1400,560 font ",11" noenhanced
set output out.'/bench.png'
set multiplot layout 1,2 title 'make bench: '.a.' and '.b.', two TCG guests, path MTU 1024'

set title 'bandwidth (perftest, BW average)'
set xlabel 'message size (bytes)'
set ylabel 'MB/s'
set logscale x 2
set logscale y 10
set format x '%.0f'
set key top left
set grid
bw(nic, t) = sprintf('< grep "^%s " %s/bw-%s.dat', t, out, nic)
plot for [t in 'ib_write_bw ib_read_bw ib_send_bw'] bw(a, t) using 2:3 \
         with linespoints lw 2 title a.' '.t, \
     for [t in 'ib_write_bw ib_read_bw ib_send_bw'] bw(b, t) using 2:3 \
         with linespoints lw 2 dt 2 title b.' '.t

unset logscale
set title 'latency of 2-byte messages: min, median, p99, p99.9, max'
set xlabel ''
set ylabel 'usec'
set logscale y 10
set format x '%g'
set xrange [0.5:5.5]
set xtics ('min' 1, 'median' 2, 'p99' 3, 'p99.9' 4, 'max' 5)
lat(nic, t) = sprintf('%s/lat-%s-%s.dat', out, nic, t)
plot for [t in 'ib_write_lat ib_read_lat ib_send_lat'] lat(a, t) using 1:2 \
         with linespoints lw 2 title a.' '.t, \
     for [t in 'ib_write_lat ib_read_lat ib_send_lat'] lat(b, t) using 1:2 \
         with linespoints lw 2 dt 2 title b.' '.t
unset multiplot
