# Bars clustered by row, one colour per column, from a TSV with a header row:
#   group <TAB> series 1 <TAB> ... <TAB> series n     ("-" marks a missing value)
# render.py sets: datafile, outfile, charttitle, ylabel, ncolumns (n).
#   gnuplot -e "datafile='d.tsv'; outfile='o.png'; charttitle='t'; ylabel='y'; ncolumns=3" clusters.gp
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 960,540 font "sans,10" noenhanced
} else {
    set terminal png size 960,540 noenhanced
}
set output outfile
set datafile separator "\t"
set datafile missing "-"
set title charttitle
set ylabel ylabel
set yrange [0:*]
set offsets 0, 0, graph 0.05, 0
set grid ytics
set key outside right top vertical
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set xtics nomirror rotate by 20 right
set format y "%.0f"
palette = "#3b6fb6 #e07b39 #5a9e4b #b5443c #8064a2 #c9a227 #4bacc6 #7f7f7f"
plot for [i=2:ncolumns + 1] datafile using i:xtic(1) title columnheader(i) linecolor rgb word(palette, 1 + (i - 2) % 8)
