/** The `settings` table: values the service makes once and every instance shares, such as secrets. */
export interface SettingTable {
  name: string
  value: string
}
