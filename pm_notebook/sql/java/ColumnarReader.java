package pm_notebook;

import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.Arrays;
import java.util.Calendar;
import java.util.TimeZone;

/**
 * Reads a JDBC ResultSet column-wise into primitive arrays, so Python crosses the JNI boundary a few times per
 * chunk instead of once per cell.
 *
 * <p>Per chunk and column: numbers as long[]/double[], booleans as byte[] (0/1), timestamps as epoch-ms long[],
 * dates as epoch-day long[], strings as one UTF-8 byte[] plus int[] offsets, arrays as int[] list offsets over a
 * string child. A byte[] null mask (1 = NULL) accompanies every column.
 */
public final class ColumnarReader {
    public static final int LONG = 0;
    public static final int DOUBLE = 1;
    public static final int BOOL = 2;
    public static final int STRING = 3;
    public static final int TIMESTAMP = 4;
    public static final int DATE = 5;
    public static final int ARRAY = 6;

    private static final long MS_PER_DAY = 86_400_000L;

    private final ResultSet rs;
    private final int n;
    private final int[] kinds;
    private final String[] names;
    private final String[] typeNames;
    private final Calendar utc = Calendar.getInstance(TimeZone.getTimeZone("UTC"));
    private boolean done;

    private int rows;
    private long[][] longs;
    private double[][] doubles;
    private byte[][] nulls;
    private byte[][] bytes;
    private int[] byteLen;
    private int[][] offsets;
    private int[][] listOffsets;
    private byte[][] childNulls;
    private int[] childCount;

    public ColumnarReader(ResultSet rs) throws SQLException {
        this.rs = rs;
        ResultSetMetaData md = rs.getMetaData();
        n = md.getColumnCount();
        kinds = new int[n];
        names = new String[n];
        typeNames = new String[n];
        for (int i = 0; i < n; i++) {
            names[i] = md.getColumnLabel(i + 1);
            typeNames[i] = md.getColumnTypeName(i + 1);
            kinds[i] = kindOf(md.getColumnType(i + 1));
        }
    }

    static int kindOf(int sqlType) {
        switch (sqlType) {
            case Types.BIGINT: case Types.INTEGER: case Types.SMALLINT: case Types.TINYINT:
                return LONG;
            case Types.DOUBLE: case Types.FLOAT: case Types.REAL: case Types.DECIMAL: case Types.NUMERIC:
                return DOUBLE;
            case Types.BOOLEAN: case Types.BIT:
                return BOOL;
            case Types.TIMESTAMP:
                return TIMESTAMP;
            case Types.DATE:
                return DATE;
            case Types.ARRAY:
                return ARRAY;
            default:
                return STRING;
        }
    }

    public int columnCount() { return n; }
    public int[] kinds() { return kinds.clone(); }
    public String[] names() { return names.clone(); }
    public String[] typeNames() { return typeNames.clone(); }
    public boolean isDone() { return done; }
    public int rows() { return rows; }

    /** Reads up to maxRows rows into fresh buffers; returns the number read (0 once the result is exhausted). */
    public int fetch(int maxRows) throws SQLException {
        allocate(maxRows);
        rows = 0;
        if (done) {
            return 0;
        }
        while (rows < maxRows) {
            if (!rs.next()) {
                done = true;
                break;
            }
            for (int c = 0; c < n; c++) {
                readCell(c, c + 1);
            }
            rows++;
        }
        return rows;
    }

    private void allocate(int cap) {
        longs = new long[n][];
        doubles = new double[n][];
        nulls = new byte[n][];
        bytes = new byte[n][];
        byteLen = new int[n];
        offsets = new int[n][];
        listOffsets = new int[n][];
        childNulls = new byte[n][];
        childCount = new int[n];
        for (int c = 0; c < n; c++) {
            nulls[c] = new byte[cap];
            switch (kinds[c]) {
                case LONG: case TIMESTAMP: case DATE:
                    longs[c] = new long[cap];
                    break;
                case DOUBLE:
                    doubles[c] = new double[cap];
                    break;
                case BOOL:
                    bytes[c] = new byte[cap];
                    break;
                case ARRAY:
                    listOffsets[c] = new int[cap + 1];
                    offsets[c] = new int[cap + 1];
                    childNulls[c] = new byte[cap];
                    bytes[c] = new byte[Math.max(64, cap * 8)];
                    break;
                default:
                    offsets[c] = new int[cap + 1];
                    bytes[c] = new byte[Math.max(64, cap * 16)];
            }
        }
    }

    private void readCell(int c, int j) throws SQLException {
        switch (kinds[c]) {
            case LONG: {
                long v = rs.getLong(j);
                if (rs.wasNull()) { nulls[c][rows] = 1; } else { longs[c][rows] = v; }
                break;
            }
            case DOUBLE: {
                double v = rs.getDouble(j);
                if (rs.wasNull()) { nulls[c][rows] = 1; } else { doubles[c][rows] = v; }
                break;
            }
            case BOOL: {
                boolean v = rs.getBoolean(j);
                if (rs.wasNull()) { nulls[c][rows] = 1; } else { bytes[c][rows] = (byte) (v ? 1 : 0); }
                break;
            }
            case TIMESTAMP: {
                Timestamp t = rs.getTimestamp(j, utc);
                if (t == null) { nulls[c][rows] = 1; } else { longs[c][rows] = t.getTime(); }
                break;
            }
            case DATE: {
                java.sql.Date d = rs.getDate(j, utc);
                if (d == null) { nulls[c][rows] = 1; } else { longs[c][rows] = Math.floorDiv(d.getTime(), MS_PER_DAY); }
                break;
            }
            case ARRAY: {
                Array a = rs.getArray(j);
                int[] lo = listOffsets[c];
                if (a == null) {
                    nulls[c][rows] = 1;
                } else {
                    Object[] items = (Object[]) a.getArray();
                    for (Object item : items) {
                        appendChild(c, item == null ? null : item.toString());
                    }
                }
                lo[rows + 1] = childCount[c];
                break;
            }
            default: {
                String s = rs.getString(j);
                if (s == null) {
                    nulls[c][rows] = 1;
                } else {
                    appendBytes(c, s.getBytes(StandardCharsets.UTF_8));
                }
                offsets[c][rows + 1] = byteLen[c];
            }
        }
    }

    private void appendChild(int c, String s) {
        int k = childCount[c];
        if (k + 1 >= offsets[c].length) {
            offsets[c] = Arrays.copyOf(offsets[c], offsets[c].length * 2);
            childNulls[c] = Arrays.copyOf(childNulls[c], childNulls[c].length * 2);
        }
        if (s == null) {
            childNulls[c][k] = 1;
        } else {
            appendBytes(c, s.getBytes(StandardCharsets.UTF_8));
        }
        offsets[c][k + 1] = byteLen[c];
        childCount[c] = k + 1;
    }

    private void appendBytes(int c, byte[] b) {
        int len = byteLen[c];
        if (len + b.length > bytes[c].length) {
            bytes[c] = Arrays.copyOf(bytes[c], Math.max(bytes[c].length * 2, len + b.length));
        }
        System.arraycopy(b, 0, bytes[c], len, b.length);
        byteLen[c] = len + b.length;
    }

    public long[] longs(int c) { return longs[c]; }
    public double[] doubles(int c) { return doubles[c]; }
    public byte[] nulls(int c) { return nulls[c]; }
    /** Booleans (0/1) for BOOL columns; UTF-8 data, trimmed to its length, for STRING and ARRAY columns. */
    public byte[] bytes(int c) {
        return kinds[c] == BOOL ? bytes[c] : Arrays.copyOf(bytes[c], byteLen[c]);
    }
    public int[] offsets(int c) { return offsets[c]; }
    public int[] listOffsets(int c) { return listOffsets[c]; }
    public byte[] childNulls(int c) { return childNulls[c]; }
    public int childCount(int c) { return childCount[c]; }
}
