# One bar per row of a two-column TSV (label, value), the value printed above each bar.
# render.py sets: datafile, outfile, charttitle, ylabel.
#   gnuplot -e "datafile='d.tsv'; outfile='o.png'; charttitle='t'; ylabel='y'" bars.gp
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 960,540 font "sans,10" noenhanced
} else {
    set terminal png size 960,540 noenhanced
}
set output outfile
set datafile separator "\t"
set title charttitle
set ylabel ylabel
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set grid ytics
set key off
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.8
set xtics nomirror rotate by 20 right
set format y "%.0f"
plot datafile using 2:xtic(1) linecolor rgb "#3b6fb6", \
     '' using 0:2:(sprintf($2 >= 100 ? "%.0f" : "%.1f", $2)) with labels offset 0,0.7
